package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// reservedPrefix marks compiled agent chains; hand-written chains may not use it.
const reservedPrefix = "__chain__"

// maxImportSuffix bounds the " (n)" suffixes tried when an import's name is taken.
const maxImportSuffix = 1000

// chainAnswer is a chain as every chain answer gives it: with the issues
// of its document and whether it is valid.
func (s *Server) chainAnswer(c echo.Context, ch *store.Chain) chainJSON {
	return toChainJSON(ch, s.validate(c, ch.Doc))
}

// decodeErr turns a document decode failure into a 400 naming the place.
func decodeErr(err error) error {
	var de *engine.DecodeError
	if errors.As(err, &de) {
		return apiError(EBADREQUEST, engine.CodeDecode, "the body is not a valid chain document: "+de.Error(),
			map[string]any{"path": de.Path, "message": de.Msg})
	}
	return apiError(EBADREQUEST, engine.CodeDecode, "the body is not a valid chain document: "+err.Error(), nil)
}

// decodeDocument reads a chain document (studio or A2E chain/req) from the body.
func (s *Server) decodeDocument(c echo.Context) (*engine.Chain, *engine.Request, error) {
	body, err := readBody(c)
	if err != nil {
		return nil, nil, err
	}
	return s.decodeDocumentBytes(body)
}

func (s *Server) decodeDocumentBytes(body []byte) (*engine.Chain, *engine.Request, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, apiError(EBADREQUEST, engine.CodeDecode, "the body is empty: send a chain document or an A2E chain/req message", nil)
	}
	doc, req, err := engine.DecodeDocument(body, s.cfg.Limits)
	if err != nil {
		return nil, nil, decodeErr(err)
	}
	return doc, req, nil
}

// maxNameBytes bounds a chain's name (it is shown in every list and used by
// skill nodes to call the chain).
const maxNameBytes = 256

// checkName enforces the rules on a chain's name.
func checkName(name string) error {
	if strings.TrimSpace(name) == "" {
		return apiError(EINVALID, "name_required", "the chain needs a name (the \"name\" field; chain_id for an A2E chain/req)", map[string]any{"path": "name"})
	}
	if len(name) > maxNameBytes {
		return apiError(EINVALID, "name_too_long",
			fmt.Sprintf("the chain name is %d bytes, over the limit of %d", len(name), maxNameBytes), map[string]any{"path": "name"})
	}
	if strings.HasPrefix(name, reservedPrefix) {
		return apiError(EINVALID, "reserved_name",
			fmt.Sprintf("chain names starting %q are reserved for compiled agent chains", reservedPrefix), map[string]any{"path": "name", "name": name})
	}
	return nil
}

// validateOptions are the run service's checks (runs.Service.ValidateOptions)
// for the chain the route names (chains/:id routes), or a new chain (other
// routes: create, import, validate): what the editor and the API show is
// what a run is refused on.
func (s *Server) validateOptions(c echo.Context) engine.ValidateOptions {
	return s.runs.ValidateOptions(c.Request().Context(), routeChainID(c))
}

// routeChainID is the saved chain a chains/:id route names, "" on others.
func routeChainID(c echo.Context) string {
	if p := c.Path(); strings.HasPrefix(p, "/v1/chains/:id") || strings.HasPrefix(p, "/chains/:id") {
		return c.Param("id")
	}
	return ""
}

func (s *Server) validate(c echo.Context, doc *engine.Chain) []engine.Issue {
	issues := engine.ValidateWith(doc, s.validateOptions(c))
	if issues == nil {
		issues = []engine.Issue{}
	}
	return issues
}

// GET /v1/chains?q=&name=&limit=&cursor= (offset= is the older paging,
// kept). name= is the exact name a skill node calls a chain by: a name no
// chain has is an empty list, not a 404, so the editor's skill view can
// look a name up without a failed request in the browser's console.
func (s *Server) listChains(c echo.Context) error {
	limit, err := intParam("limit", c.QueryParam("limit"), 50, 1, 1000)
	if err != nil {
		return err
	}
	offset, err := intParam("offset", c.QueryParam("offset"), 0, 0, 1<<30)
	if err != nil {
		return err
	}
	q, name := c.QueryParam("q"), c.QueryParam("name")
	f := store.ChainFilter{Query: q, Name: name, Limit: min(limit+1, 1000), Offset: offset}
	if cur := c.QueryParam("cursor"); cur != "" {
		if offset != 0 {
			return apiError(EBADREQUEST, "bad_parameter", "cursor and offset cannot be used together", map[string]any{"parameter": "offset"})
		}
		if f.After, err = decodeChainCursor(cur); err != nil {
			return err
		}
	}
	rows, total, err := s.db.ListChains(c.Request().Context(), f)
	if err != nil {
		return err
	}
	// One row more than the page says whether another page follows (at
	// the largest limit, a full page does).
	more := len(rows) > limit || limit == 1000 && len(rows) == limit
	if len(rows) > limit {
		rows = rows[:limit]
	}
	out := map[string]any{"chains": toChainSummariesJSON(rows), "total": total, "limit": limit, "offset": offset,
		"next": "", "next_url": nil}
	if more {
		last := rows[len(rows)-1]
		next := encodeChainCursor(store.ChainKey{Name: last.Name, ID: last.ID})
		v := url.Values{"cursor": {next}, "limit": {fmt.Sprint(limit)}}
		if q != "" {
			v.Set("q", q)
		}
		if name != "" {
			v.Set("name", name)
		}
		out["next"], out["next_url"] = next, "/v1/chains?"+v.Encode()
	}
	return c.JSON(http.StatusOK, out)
}

// A chain list cursor is the last row's place, [name, id] as base64url JSON:
// opaque to clients, and the name's own order keeps pages stable.
func encodeChainCursor(k store.ChainKey) string {
	b, _ := json.Marshal([2]string{k.Name, k.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeChainCursor(s string) (*store.ChainKey, error) {
	var k [2]string
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil || k[1] == "" {
		return nil, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("cursor is not a cursor from a previous page: %q", s), map[string]any{"parameter": "cursor"})
	}
	return &store.ChainKey{Name: k[0], ID: k[1]}, nil
}

// POST /v1/chains
func (s *Server) createChain(c echo.Context) error {
	doc, _, err := s.decodeDocument(c)
	if err != nil {
		return err
	}
	if err := checkName(doc.Name); err != nil {
		return err
	}
	ch, err := s.db.CreateChain(c.Request().Context(), doc, c.QueryParam("message"))
	if err != nil {
		return storeErr(err, "chain")
	}
	return s.chainCreated(c, ch)
}

func (s *Server) chainCreated(c echo.Context, ch *store.Chain) error {
	c.Response().Header().Set(echo.HeaderLocation, "/v1/chains/"+url.PathEscape(ch.ID))
	c.Response().Header().Set("ETag", etag(ch.Version))
	return c.JSON(http.StatusCreated, s.chainAnswer(c, ch))
}

// GET /v1/chains/{id}
func (s *Server) getChain(c echo.Context) error {
	ch, err := s.db.GetChain(c.Request().Context(), c.Param("id"))
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	if notModified(c, ch.Version) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, s.chainAnswer(c, ch))
}

// notModified sets the ETag of version and reports whether the request's
// If-None-Match already names it (then the answer is 304).
func notModified(c echo.Context, version int) bool {
	c.Response().Header().Set("ETag", etag(version))
	inm := c.Request().Header.Get("If-None-Match")
	return inm != "" && etagMatches(inm, version)
}

// parseETag reads "v<n>" (quoted or not, weak or not).
func parseETag(h string) (int, bool) {
	h = strings.TrimSpace(h)
	h = strings.TrimPrefix(h, "W/")
	h = strings.Trim(h, `"`)
	if !strings.HasPrefix(h, "v") {
		return 0, false
	}
	n, err := strconv.Atoi(h[1:])
	return n, err == nil && n >= 1
}

func etagMatches(header string, version int) bool {
	for _, part := range strings.Split(header, ",") {
		if strings.TrimSpace(part) == "*" {
			return true
		}
		if n, ok := parseETag(part); ok && n == version {
			return true
		}
	}
	return false
}

// updateBody is PUT's wrapped form: {"version": n, "doc": {...}, "message": "..."}.
type updateBody struct {
	Version *int            `json:"version"`
	Doc     json.RawMessage `json:"doc"`
	Message string          `json:"message"`
}

// PUT /v1/chains/{id}
func (s *Server) updateChain(c echo.Context) error {
	id := c.Param("id")
	body, err := readBody(c)
	if err != nil {
		return err
	}
	base, err := baseVersion(c)
	if err != nil {
		return err
	}
	message := c.QueryParam("message")
	// The wrapped form carries the version beside the document.
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil && top["doc"] != nil && top["nodes"] == nil {
		var w updateBody
		if err := bindJSONBytes(body, &w); err != nil {
			return err
		}
		if w.Version != nil && base == 0 {
			base = *w.Version
		}
		if w.Message != "" {
			message = w.Message
		}
		body = w.Doc
	}
	doc, _, err := s.decodeDocumentBytes(body)
	if err != nil {
		return err
	}
	if base == 0 {
		return s.needBase(c, id, `, ?version=<n>, or {"version": n, "doc": {...}}`)
	}
	return s.saveAndAnswer(c, id, base, doc, message)
}

// baseVersion reads the version an update starts from: If-Match, else
// ?version; 0 when neither is given.
func baseVersion(c echo.Context) (int, error) {
	if n, err := ifMatch(c); err != nil || n != 0 {
		return n, err
	}
	if c.QueryParam("version") != "" {
		return intParam("version", c.QueryParam("version"), 0, 1, 1<<30)
	}
	return 0, nil
}

// needBase answers an update without a base version: 404 when the chain
// does not exist, else 428, so the caller knows what to fix.
func (s *Server) needBase(c echo.Context, id, forms string) error {
	if _, err := s.db.GetChain(c.Request().Context(), id); err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", id))
	}
	return apiError(EPRECONDITION, "precondition_required",
		`updating a chain needs the version the edit started from: send If-Match: "v<version>" (the ETag of GET)`+forms, nil)
}

// saveAndAnswer stores doc as the version after base and answers with the
// chain and its issues.
func (s *Server) saveAndAnswer(c echo.Context, id string, base int, doc *engine.Chain, message string) error {
	if err := checkName(doc.Name); err != nil {
		return err
	}
	ch, err := s.db.SaveChain(c.Request().Context(), id, base, doc, message)
	if err != nil {
		var ve *store.VersionConflictError
		if errors.As(err, &ve) && ve.Current < 0 { // lost a race: report the version now current
			if cur, gerr := s.db.GetChain(c.Request().Context(), id); gerr == nil {
				ve.Current = cur.Version
			}
		}
		return storeErr(err, fmt.Sprintf("chain %q", id))
	}
	c.Response().Header().Set("ETag", etag(ch.Version))
	return c.JSON(http.StatusOK, s.chainAnswer(c, ch))
}

// ifMatch reads If-Match: the version the request was made against, 0 when
// the header is absent.
func ifMatch(c echo.Context) (int, error) {
	im := c.Request().Header.Get("If-Match")
	if im == "" {
		return 0, nil
	}
	n, ok := parseETag(im)
	if !ok {
		return 0, apiError(EBADREQUEST, "bad_precondition", fmt.Sprintf(`If-Match must be the chain's ETag, "v<version>"; got %s`, im), nil)
	}
	return n, nil
}

// staleTag turns the store's version conflict for an If-Match request into
// 412 (the tag is stale: nothing was changed), with the current ETag.
func staleTag(c echo.Context, err error, what string) error {
	var ve *store.VersionConflictError
	if errors.As(err, &ve) {
		c.Response().Header().Set("ETag", etag(ve.Current))
		return apiError(ESTALE, "precondition_failed",
			fmt.Sprintf(`If-Match: "v%d" is stale: the chain is at version %d; nothing was changed`, ve.Base, ve.Current),
			map[string]any{"current_version": ve.Current, "base_version": ve.Base})
	}
	return storeErr(err, what)
}

// DELETE /v1/chains/{id} (If-Match: "v<n>" refuses when the chain moved on)
func (s *Server) deleteChain(c echo.Context) error {
	base, err := ifMatch(c)
	if err != nil {
		return err
	}
	if err := s.db.DeleteChain(c.Request().Context(), c.Param("id"), base); err != nil {
		return staleTag(c, err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	s.mcp.exposureChanged(c.Request().Context()) // its tool, if it had one, goes
	return c.NoContent(http.StatusNoContent)
}

// GET /v1/chains/{id}/versions
func (s *Server) listVersions(c echo.Context) error {
	vs, err := s.db.ListVersions(c.Request().Context(), c.Param("id"))
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	// History only grows: the newest version tags the whole list.
	if len(vs) > 0 && notModified(c, vs[0].Version) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, map[string]any{"chain_id": c.Param("id"), "versions": toChainVersionsJSON(vs)})
}

// GET /v1/chains/{id}/versions/{v}
func (s *Server) getVersion(c echo.Context) error {
	v, err := versionParam(c)
	if err != nil {
		return err
	}
	cv, err := s.db.GetVersion(c.Request().Context(), c.Param("id"), v)
	if err != nil {
		return storeErr(err, fmt.Sprintf("version %d of chain %q", v, c.Param("id")))
	}
	if notModified(c, v) { // a version never changes
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, toChainVersionJSON(cv))
}

// POST /v1/chains/{id}/versions/{v}/restore
func (s *Server) restoreVersion(c echo.Context) error {
	v, err := versionParam(c)
	if err != nil {
		return err
	}
	base, err := ifMatch(c)
	if err != nil {
		return err
	}
	ch, err := s.db.RestoreVersion(c.Request().Context(), c.Param("id"), v, base, c.QueryParam("message"))
	if err != nil {
		return staleTag(c, err, fmt.Sprintf("version %d of chain %q", v, c.Param("id")))
	}
	c.Response().Header().Set("ETag", etag(ch.Version))
	return c.JSON(http.StatusOK, s.chainAnswer(c, ch))
}

// nameVersionBody is the body of POST /v1/chains/{id}/versions.
type nameVersionBody struct {
	Message string `json:"message"`
	Version int    `json:"version"` // the version being named; 0: whatever is current
}

// POST /v1/chains/{id}/versions {"message", "version"?}: save the current
// document again as a new version named message ("Save version…"), shown
// apart from the autosaves in the history.
func (s *Server) nameVersion(c echo.Context) error {
	var body nameVersionBody
	if err := bindJSON(c, &body); err != nil {
		return err
	}
	msg := strings.TrimSpace(body.Message)
	if msg == "" {
		return apiError(EBADREQUEST, "message_required", `a named version needs a message: {"message": "what this version is"}`, map[string]any{"path": "message"})
	}
	if len(msg) > store.MaxVersionMessage {
		return apiError(EBADREQUEST, "message_too_long",
			fmt.Sprintf("the message is %d bytes, over the limit of %d", len(msg), store.MaxVersionMessage), map[string]any{"path": "message"})
	}
	if body.Version < 0 {
		return apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %d", body.Version), map[string]any{"path": "version"})
	}
	ch, err := s.db.NameVersion(c.Request().Context(), c.Param("id"), body.Version, msg)
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	c.Response().Header().Set("ETag", etag(ch.Version))
	return c.JSON(http.StatusCreated, s.chainAnswer(c, ch))
}

// publishBody is the body of POST /v1/chains/{id}/publish.
type publishBody struct {
	Version int    `json:"version"` // the version to publish; 0: the current one (the draft)
	Message string `json:"message"` // why, shown in the history
}

// POST /v1/chains/{id}/publish {"version"?, "message"?} (If-Match: the
// draft the person looked at): make a version the one triggers, webhooks,
// runs by name, skill calls and MCP tools run. A version with validation
// errors is refused (422 chain_invalid with the issues), so what is
// published can always run.
func (s *Server) publishChain(c echo.Context) error {
	var body publishBody
	if err := bindJSON(c, &body); err != nil {
		return err
	}
	if body.Version < 0 {
		return apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %d", body.Version), map[string]any{"path": "version"})
	}
	if msg := strings.TrimSpace(body.Message); len(msg) > store.MaxVersionMessage {
		return apiError(EBADREQUEST, "message_too_long",
			fmt.Sprintf("the message is %d bytes, over the limit of %d", len(msg), store.MaxVersionMessage), map[string]any{"path": "message"})
	}
	base, err := ifMatch(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	ch, err := s.chainAt(ctx, id, body.Version)
	if err != nil {
		return err
	}
	if err := s.runs.CheckRun(ctx, ch.ID, ch.Doc); err != nil {
		var inv *runs.InvalidChainError
		if errors.As(err, &inv) {
			return apiError(EINVALID, engine.CodeInvalid,
				fmt.Sprintf("version %d cannot be published: %s (fix them, then publish)", ch.Version, inv.Error()),
				map[string]any{"issues": inv.Issues, "version": ch.Version})
		}
		return err
	}
	pub, err := s.db.PublishChain(ctx, id, ch.Version, base, callerOf(c).Name, body.Message)
	if err != nil {
		return staleTag(c, err, fmt.Sprintf("chain %q", id))
	}
	if pub.MCPExposed {
		s.mcp.exposureChanged(ctx) // its tool now runs and describes this version
	}
	c.Response().Header().Set("ETag", etag(pub.Version))
	return c.JSON(http.StatusOK, s.chainAnswer(c, pub))
}

// GET /v1/chains/{id}/diff?from=&to=
func (s *Server) diffVersions(c echo.Context) error {
	id := c.Param("id")
	ctx := c.Request().Context()
	to, err := intParam("to", c.QueryParam("to"), 0, 1, 1<<30)
	if err != nil {
		return err
	}
	from, err := intParam("from", c.QueryParam("from"), 0, 1, 1<<30)
	if err != nil {
		return err
	}
	if to == 0 || from == 0 {
		ch, err := s.db.GetChain(ctx, id)
		if err != nil {
			return storeErr(err, fmt.Sprintf("chain %q", id))
		}
		if to == 0 {
			to = ch.Version
		}
		if from == 0 {
			from = max(1, to-1)
		}
	}
	for _, v := range []int{from, to} {
		if _, err := s.db.GetVersion(ctx, id, v); err != nil {
			return storeErr(err, fmt.Sprintf("version %d of chain %q", v, id))
		}
	}
	d, err := s.db.DiffVersions(ctx, id, from, to)
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", id))
	}
	return c.JSON(http.StatusOK, map[string]any{"chain_id": id, "from": from, "to": to, "diff": d, "empty": d.Empty()})
}

// GET /v1/chains/{id}/export?format=studio|a2e
func (s *Server) exportChain(c echo.Context) error {
	format := c.QueryParam("format")
	if format == "" {
		format = "studio"
	}
	if format != "studio" && format != "a2e" {
		return apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("format must be studio or a2e, got %q", format), map[string]any{"parameter": "format"})
	}
	ch, err := s.db.GetChain(c.Request().Context(), c.Param("id"))
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	var body any = ch.Doc
	suffix := ".chain.json"
	if format == "a2e" {
		req, err := a2e.Export(ch.Doc)
		if err != nil {
			var ee *a2e.ExportError
			if errors.As(err, &ee) {
				return apiError(EINVALID, "not_expressible", err.Error(), ee)
			}
			return err
		}
		// The message is the file of this chain version: its id and ts come
		// from the version, so exporting it again gives the same bytes.
		req.ID = uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("chainstudio:chain/%s/v%d", ch.ID, ch.Version))).String()
		req.Ts = float64(ch.Updated.UnixMicro()) / 1e6
		body, suffix = req, ".a2e.json"
	}
	b, err := engine.MarshalExport(body)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", contentDisposition(ch.Name+suffix))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// contentDisposition names an attachment: an ASCII fallback and the exact
// name in RFC 5987 form.
func contentDisposition(name string) string {
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' || r == '/' {
			return '_'
		}
		return r
	}, name)
	return fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, ascii, url.PathEscape(name))
}

// POST /v1/chains/import[?validate=only]
func (s *Server) importChain(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	doc, req, err := s.decodeDocumentBytes(body)
	if err != nil {
		// every problem found, not only the first (the import dialog lists the same)
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == engine.CodeDecode {
			if d, ok := ae.Details.(map[string]any); ok {
				d["problems"] = decodeProblems(body, s.cfg.Limits)
			} else {
				ae.Details = map[string]any{"problems": decodeProblems(body, s.cfg.Limits)}
			}
		}
		return err
	}
	format := "studio"
	if req != nil {
		format = "a2e"
	}
	switch c.QueryParam("validate") {
	case "":
	case "only":
		issues := s.validate(c, doc)
		return c.JSON(http.StatusOK, map[string]any{"format": format, "doc": doc, "issues": issues, "valid": !engine.HasErrors(issues)})
	default:
		return apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("validate must be \"only\" or absent, got %q", c.QueryParam("validate")), map[string]any{"parameter": "validate"})
	}
	ch, err := s.importDoc(c, doc, req, c.QueryParam("message"))
	if err != nil {
		return err
	}
	return s.chainCreated(c, ch)
}

// importDoc saves an imported document: the API's import and the chain
// list's Import dialog share it. A name already in use becomes "name (2)",
// "name (3)"…; the name rules are the same as for any chain.
func (s *Server) importDoc(c echo.Context, doc *engine.Chain, req *engine.Request, message string) (*store.Chain, error) {
	if err := checkName(doc.Name); err != nil {
		return nil, err
	}
	format := "studio"
	if req != nil {
		format = "a2e"
	}
	if message == "" {
		message = "imported (" + format + ")"
	}
	base := doc.Name
	for n := 1; n <= maxImportSuffix; n++ {
		if n > 1 {
			doc.Name = fmt.Sprintf("%s (%d)", base, n)
			if len(doc.Name) > maxNameBytes {
				return nil, apiError(ECONFLICT, "name_taken",
					fmt.Sprintf("a chain named %q already exists, and %q is over the name limit of %d bytes", base, doc.Name, maxNameBytes), map[string]any{"name": base})
			}
		}
		ch, err := s.db.CreateChain(c.Request().Context(), doc, message)
		if errors.Is(err, store.ErrNameTaken) {
			continue
		}
		if err != nil {
			return nil, storeErr(err, "chain")
		}
		return ch, nil
	}
	return nil, apiError(ECONFLICT, "name_taken", fmt.Sprintf("%d chains are already named %q or %q (n)", maxImportSuffix, base, base), nil)
}

// POST /v1/validate
func (s *Server) validateDocument(c echo.Context) error {
	doc, req, err := s.decodeDocument(c)
	if err != nil {
		return err
	}
	issues := s.validate(c, doc)
	format := "studio"
	if req != nil {
		format = "a2e"
	}
	return c.JSON(http.StatusOK, map[string]any{"issues": issues, "valid": !engine.HasErrors(issues), "format": format})
}

// patchedDoc applies patch (engine.Patch) to version base of chain id, which
// must be its current version: a patch names changes to one version, so on
// any other it is a *store.VersionConflictError before it is read. The store
// checks the version again when the result is saved.
func (s *Server) patchedDoc(ctx context.Context, id string, base int, patch []byte) (*engine.Chain, error) {
	ch, err := s.db.GetChain(ctx, id)
	if err != nil {
		return nil, err
	}
	if ch.Version != base {
		return nil, &store.VersionConflictError{ChainID: id, Base: base, Current: ch.Version}
	}
	// GetChain's document is the caller's own copy, so it is patched in place.
	if err := engine.ApplyPatch(ch.Doc, patch, s.cfg.Limits); err != nil {
		return nil, err
	}
	return ch.Doc, nil
}

// PATCH /v1/chains/{id}: an engine.Patch (only the changed nodes and edges)
// applied to the version If-Match names, saved as the next version.
func (s *Server) patchChain(c echo.Context) error {
	id := c.Param("id")
	body, err := readBody(c)
	if err != nil {
		return err
	}
	base, err := baseVersion(c)
	if err != nil {
		return err
	}
	if base == 0 {
		return s.needBase(c, id, " or ?version=<n>")
	}
	doc, err := s.patchedDoc(c.Request().Context(), id, base, body)
	var de *engine.DecodeError
	switch {
	case errors.As(err, &de):
		return apiError(EBADREQUEST, engine.CodeDecode, "the patch does not apply: "+de.Error(),
			map[string]any{"path": de.Path, "message": de.Msg})
	case err != nil:
		return storeErr(err, fmt.Sprintf("chain %q", id))
	}
	return s.saveAndAnswer(c, id, base, doc, c.QueryParam("message"))
}
