package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// ReservedPrefix marks compiled agent chains; hand-written chains may not use it.
const ReservedPrefix = "__chain__"

// MaxImportSuffix bounds the " (n)" suffixes tried when an import's name is taken.
const MaxImportSuffix = 1000

// MaxNameBytes bounds a chain's name (it is shown in every list and used by
// skill nodes to call the chain).
const MaxNameBytes = 256

// CheckName enforces the rules on a chain's name.
func CheckName(name string) error {
	if strings.TrimSpace(name) == "" {
		return httpcore.Error(httpcore.EINVALID, "name_required", "the chain needs a name (the \"name\" field; chain_id for an A2E chain/req)", map[string]any{"path": "name"})
	}
	if len(name) > MaxNameBytes {
		return httpcore.Error(httpcore.EINVALID, "name_too_long",
			fmt.Sprintf("the chain name is %d bytes, over the limit of %d", len(name), MaxNameBytes), map[string]any{"path": "name"})
	}
	if strings.HasPrefix(name, ReservedPrefix) {
		return httpcore.Error(httpcore.EINVALID, "reserved_name",
			fmt.Sprintf("chain names starting %q are reserved for compiled agent chains", ReservedPrefix), map[string]any{"path": "name", "name": name})
	}
	return nil
}

// ValidateOptions are the run service's checks (runs.Service.ValidateOptions)
// for the chain the route names (chains/:id routes), or a new chain (other
// routes: create, import, validate): what the editor and the API show is
// what a run is refused on.
func (s *Env) ValidateOptions(c echo.Context) chain.ValidateOptions {
	return s.Runs.ValidateOptions(c.Request().Context(), RouteChainID(c))
}

// RouteChainID is the saved chain a chains/:id route names, "" on others.
func RouteChainID(c echo.Context) string {
	if p := c.Path(); strings.HasPrefix(p, "/v1/chains/:id") || strings.HasPrefix(p, "/chains/:id") {
		return c.Param("id")
	}
	return ""
}

// Publishable reports whether a chain created from doc is published as it is
// created: only a document Publish would take is (a broken test case does
// not stop it, as it stops no run), so that a blank or broken chain is never
// what a trigger, a webhook or a run by name starts.
func (s *Env) Publishable(c echo.Context, doc *chain.Chain) bool {
	return len(doc.Nodes) > 0 && s.Runs.CheckRun(c.Request().Context(), &store.Chain{Doc: doc}) == nil
}

// ImportDoc saves an imported document: the API's import and the chain
// list's Import dialog share it. A name already in use becomes "name (2)",
// "name (3)"…; the name rules are the same as for any chain.
func (s *Env) ImportDoc(c echo.Context, doc *chain.Chain, req *chain.Request, message string) (*store.Chain, error) {
	if err := CheckName(doc.Name); err != nil {
		return nil, err
	}
	format := "studio"
	if req != nil {
		format = "a2e"
	}
	if message == "" {
		message = "imported (" + format + ")"
	}
	publish := s.Publishable(c, doc)
	base := doc.Name
	for n := 1; n <= MaxImportSuffix; n++ {
		if n > 1 {
			doc.Name = fmt.Sprintf("%s (%d)", base, n)
			if len(doc.Name) > MaxNameBytes {
				return nil, httpcore.Error(httpcore.ECONFLICT, "name_taken",
					fmt.Sprintf("a chain named %q already exists, and %q is over the name limit of %d bytes", base, doc.Name, MaxNameBytes), map[string]any{"name": base})
			}
		}
		ch, err := s.DB.CreateChain(c.Request().Context(), doc, message, publish)
		if errors.Is(err, store.ErrNameTaken) {
			continue
		}
		if err != nil {
			return nil, httpcore.StoreErr(err, "chain")
		}
		return ch, nil
	}
	return nil, httpcore.Error(httpcore.ECONFLICT, "name_taken", fmt.Sprintf("%d chains are already named %q or %q (n)", MaxImportSuffix, base, base), nil)
}

// PatchedDoc applies patch (chain.Patch) to version base of chain id, which
// must be its current version: a patch names changes to one version, so on
// any other it is a *store.VersionConflictError before it is read. The store
// checks the version again when the result is saved.
func (s *Env) PatchedDoc(ctx context.Context, id string, base int, patch []byte) (*chain.Chain, error) {
	ch, err := s.DB.GetChain(ctx, id)
	if err != nil {
		return nil, err
	}
	if ch.Version != base {
		return nil, &store.VersionConflictError{ChainID: id, Base: base, Current: ch.Version}
	}
	// GetChain's document is the caller's own copy, so it is patched in place.
	if err := chain.ApplyPatch(ch.Doc, patch, s.Limits); err != nil {
		return nil, err
	}
	return ch.Doc, nil
}
