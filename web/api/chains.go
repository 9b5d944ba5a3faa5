package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// chainAnswer is a chain as every chain answer gives it: with the issues
// of its document and whether it is valid.
func (s *Chains) chainAnswer(c echo.Context, ch *store.Chain) chainJSON {
	return ToChainJSON(ch, s.validate(c, ch.Doc))
}

// decodeDocument reads a chain document (studio or A2E chain/req) from the body.
func (s *Chains) decodeDocument(c echo.Context) (*chain.Chain, *chain.Request, error) {
	body, err := httpcore.ReadBody(c)
	if err != nil {
		return nil, nil, err
	}
	return s.decodeDocumentBytes(body)
}

func (s *Chains) decodeDocumentBytes(body []byte) (*chain.Chain, *chain.Request, error) {
	return httpcore.DecodeDocument(body, s.Limits)
}

func (s *Chains) validate(c echo.Context, doc *chain.Chain) []chain.Issue {
	issues := chain.ValidateWith(doc, s.ValidateOptions(c))
	if issues == nil {
		issues = []chain.Issue{}
	}
	return issues
}

// GET /v1/chains?q=&name=&limit=&cursor= (offset= is the older paging,
// kept). name= is the exact name a skill node calls a chain by: a name no
// chain has is an empty list, not a 404, so the editor's skill view can
// look a name up without a failed request in the browser's console.
func (s *Chains) ListChains(c echo.Context) error {
	limit, err := ops.IntParam("limit", c.QueryParam("limit"), 50, 1, 1000)
	if err != nil {
		return err
	}
	offset, err := ops.IntParam("offset", c.QueryParam("offset"), 0, 0, 1<<30)
	if err != nil {
		return err
	}
	q, name := c.QueryParam("q"), c.QueryParam("name")
	f := store.ChainFilter{Query: q, Name: name, Limit: min(limit+1, 1000), Offset: offset}
	if cur := c.QueryParam("cursor"); cur != "" {
		if offset != 0 {
			return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "cursor and offset cannot be used together", map[string]any{"parameter": "offset"})
		}
		if f.After, err = decodeChainCursor(cur); err != nil {
			return err
		}
	}
	rows, total, err := s.DB.ListChains(c.Request().Context(), f)
	if err != nil {
		return err
	}
	// One row more than the page says whether another page follows (at
	// the largest limit, a full page does).
	more := len(rows) > limit || limit == 1000 && len(rows) == limit
	if len(rows) > limit {
		rows = rows[:limit]
	}
	out := map[string]any{"chains": ToChainSummariesJSON(rows), "total": total, "limit": limit, "offset": offset,
		"next": "", "next_url": nil}
	if more {
		last := rows[len(rows)-1]
		next := EncodeChainCursor(store.ChainKey{Name: last.Name, ID: last.ID})
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
func EncodeChainCursor(k store.ChainKey) string {
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
		return nil, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("cursor is not a cursor from a previous page: %q", s), map[string]any{"parameter": "cursor"})
	}
	return &store.ChainKey{Name: k[0], ID: k[1]}, nil
}

// POST /v1/chains
func (s *Chains) CreateChain(c echo.Context) error {
	doc, _, err := s.decodeDocument(c)
	if err != nil {
		return err
	}
	if err := ops.CheckName(doc.Name); err != nil {
		return err
	}
	ch, err := s.DB.CreateChain(c.Request().Context(), doc, c.QueryParam("message"), s.Publishable(c, doc))
	if err != nil {
		return httpcore.StoreErr(err, "chain")
	}
	return s.chainCreated(c, ch)
}

func (s *Chains) chainCreated(c echo.Context, ch *store.Chain) error {
	c.Response().Header().Set(echo.HeaderLocation, "/v1/chains/"+url.PathEscape(ch.ID))
	c.Response().Header().Set("ETag", ops.Etag(ch.Version))
	return c.JSON(http.StatusCreated, s.chainAnswer(c, ch))
}

// GET /v1/chains/{id}
func (s *Chains) GetChain(c echo.Context) error {
	ch, err := s.DB.GetChain(c.Request().Context(), c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	if notModified(c, ch.Version) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, s.chainAnswer(c, ch))
}

// notModified sets the ETag of version and reports whether the request's
// If-None-Match already names it (then the answer is 304).
func notModified(c echo.Context, version int) bool {
	c.Response().Header().Set("ETag", ops.Etag(version))
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
func (s *Chains) UpdateChain(c echo.Context) error {
	id := c.Param("id")
	body, err := httpcore.ReadBody(c)
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
		if err := httpcore.BindJSONBytes(body, &w); err != nil {
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
		return ops.IntParam("version", c.QueryParam("version"), 0, 1, 1<<30)
	}
	return 0, nil
}

// needBase answers an update without a base version: 404 when the chain
// does not exist, else 428, so the caller knows what to fix.
func (s *Chains) needBase(c echo.Context, id, forms string) error {
	if _, err := s.DB.GetChain(c.Request().Context(), id); err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
	}
	return httpcore.Error(httpcore.EPRECONDITION, "precondition_required",
		`updating a chain needs the version the edit started from: send If-Match: "v<version>" (the ETag of GET)`+forms, nil)
}

// saveAndAnswer stores doc as the version after base and answers with the
// chain and its issues.
func (s *Chains) saveAndAnswer(c echo.Context, id string, base int, doc *chain.Chain, message string) error {
	if err := ops.CheckName(doc.Name); err != nil {
		return err
	}
	ch, err := s.DB.SaveChain(c.Request().Context(), id, base, doc, message)
	if err != nil {
		var ve *store.VersionConflictError
		if errors.As(err, &ve) && ve.Current < 0 { // lost a race: report the version now current
			if cur, gerr := s.DB.GetChain(c.Request().Context(), id); gerr == nil {
				ve.Current = cur.Version
			}
		}
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
	}
	c.Response().Header().Set("ETag", ops.Etag(ch.Version))
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
		return 0, httpcore.Error(httpcore.EBADREQUEST, "bad_precondition", fmt.Sprintf(`If-Match must be the chain's ETag, "v<version>"; got %s`, im), nil)
	}
	return n, nil
}

// staleTag turns the store's version conflict for an If-Match request into
// 412 (the tag is stale: nothing was changed), with the current ETag.
func staleTag(c echo.Context, err error, what string) error {
	var ve *store.VersionConflictError
	if errors.As(err, &ve) {
		c.Response().Header().Set("ETag", ops.Etag(ve.Current))
		return httpcore.Error(httpcore.ESTALE, "precondition_failed",
			fmt.Sprintf(`If-Match: "v%d" is stale: the chain is at version %d; nothing was changed`, ve.Base, ve.Current),
			map[string]any{"current_version": ve.Current, "base_version": ve.Base})
	}
	return httpcore.StoreErr(err, what)
}

// DELETE /v1/chains/{id} (If-Match: "v<n>" refuses when the chain moved on)
func (s *Chains) DeleteChain(c echo.Context) error {
	base, err := ifMatch(c)
	if err != nil {
		return err
	}
	if err := s.Env.DeleteChain(c.Request().Context(), c.Param("id"), base); err != nil {
		return staleTag(c, err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	return c.NoContent(http.StatusNoContent)
}

// GET /v1/chains/{id}/versions
func (s *Chains) ListVersions(c echo.Context) error {
	vs, err := s.DB.ListVersions(c.Request().Context(), c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	// History only grows: the newest version tags the whole list.
	if len(vs) > 0 && notModified(c, vs[0].Version) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, map[string]any{"chain_id": c.Param("id"), "versions": ToChainVersionsJSON(vs)})
}

// GET /v1/chains/{id}/versions/{v}
func (s *Chains) GetVersion(c echo.Context) error {
	v, err := ops.VersionParam(c)
	if err != nil {
		return err
	}
	cv, err := s.DB.GetVersion(c.Request().Context(), c.Param("id"), v)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("version %d of chain %q", v, c.Param("id")))
	}
	if notModified(c, v) { // a version never changes
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, toChainVersionJSON(cv))
}

// POST /v1/chains/{id}/versions/{v}/restore
func (s *Chains) RestoreVersion(c echo.Context) error {
	v, err := ops.VersionParam(c)
	if err != nil {
		return err
	}
	base, err := ifMatch(c)
	if err != nil {
		return err
	}
	ch, err := s.DB.RestoreVersion(c.Request().Context(), c.Param("id"), v, base, c.QueryParam("message"))
	if err != nil {
		return staleTag(c, err, fmt.Sprintf("version %d of chain %q", v, c.Param("id")))
	}
	c.Response().Header().Set("ETag", ops.Etag(ch.Version))
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
func (s *Chains) NameVersion(c echo.Context) error {
	var body nameVersionBody
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	msg := strings.TrimSpace(body.Message)
	if msg == "" {
		return httpcore.Error(httpcore.EBADREQUEST, "message_required", `a named version needs a message: {"message": "what this version is"}`, map[string]any{"path": "message"})
	}
	if len(msg) > store.MaxVersionMessage {
		return httpcore.Error(httpcore.EBADREQUEST, "message_too_long",
			fmt.Sprintf("the message is %d bytes, over the limit of %d", len(msg), store.MaxVersionMessage), map[string]any{"path": "message"})
	}
	if body.Version < 0 {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %d", body.Version), map[string]any{"path": "version"})
	}
	ch, err := s.DB.NameVersion(c.Request().Context(), c.Param("id"), body.Version, msg)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	c.Response().Header().Set("ETag", ops.Etag(ch.Version))
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
func (s *Chains) PublishChain(c echo.Context) error {
	var body publishBody
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	if body.Version < 0 {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %d", body.Version), map[string]any{"path": "version"})
	}
	if msg := strings.TrimSpace(body.Message); len(msg) > store.MaxVersionMessage {
		return httpcore.Error(httpcore.EBADREQUEST, "message_too_long",
			fmt.Sprintf("the message is %d bytes, over the limit of %d", len(msg), store.MaxVersionMessage), map[string]any{"path": "message"})
	}
	base, err := ifMatch(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	ch, err := s.ChainAt(ctx, id, body.Version)
	if err != nil {
		return err
	}
	pub, err := s.PublishVersion(c, ch, base, body.Message)
	var inv *runs.InvalidChainError
	if errors.As(err, &inv) {
		return httpcore.Error(httpcore.EINVALID, chain.CodeInvalid,
			fmt.Sprintf("version %d cannot be published: %s (fix them, then publish)", ch.Version, inv.Error()),
			map[string]any{"issues": inv.Issues, "version": ch.Version})
	}
	if err != nil {
		return staleTag(c, err, fmt.Sprintf("chain %q", id))
	}
	c.Response().Header().Set("ETag", ops.Etag(pub.Version))
	return c.JSON(http.StatusOK, s.chainAnswer(c, pub))
}

// GET /v1/chains/{id}/diff?from=&to=
func (s *Chains) DiffVersions(c echo.Context) error {
	id := c.Param("id")
	ctx := c.Request().Context()
	to, err := ops.IntParam("to", c.QueryParam("to"), 0, 1, 1<<30)
	if err != nil {
		return err
	}
	from, err := ops.IntParam("from", c.QueryParam("from"), 0, 1, 1<<30)
	if err != nil {
		return err
	}
	if to == 0 || from == 0 {
		ch, err := s.DB.GetChain(ctx, id)
		if err != nil {
			return httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
		}
		if to == 0 {
			to = ch.Version
		}
		if from == 0 {
			from = max(1, to-1)
		}
	}
	// The store returns the two documents; comparing them is inspect's job.
	var docs [2]*chain.Chain
	for i, v := range []int{from, to} {
		cv, err := s.DB.GetVersion(ctx, id, v)
		if err != nil {
			return httpcore.StoreErr(err, fmt.Sprintf("version %d of chain %q", v, id))
		}
		docs[i] = cv.Doc
	}
	d := inspect.Diff(docs[0], docs[1])
	return c.JSON(http.StatusOK, map[string]any{"chain_id": id, "from": from, "to": to, "diff": d, "empty": d.Empty()})
}

// GET /v1/chains/{id}/export?format=studio|a2e&version=published|draft|N
func (s *Chains) ExportChain(c echo.Context) error {
	format := c.QueryParam("format")
	if format == "" {
		format = "studio"
	}
	if format != "studio" && format != "a2e" {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("format must be studio or a2e, got %q", format), map[string]any{"parameter": "format"})
	}
	ch, which, err := s.exportVersion(c)
	if err != nil {
		return err
	}
	// Which version the file holds, said where a person and a script see
	// it: the file's name and two headers.
	c.Response().Header().Set("X-Chain-Version", strconv.Itoa(ch.Version))
	c.Response().Header().Set("X-Chain-Export", which)
	var body any = ch.Doc
	suffix := ".chain.json"
	if which != "version" {
		suffix = "." + which + suffix
	}
	suffix = fmt.Sprintf(".v%d%s", ch.Version, suffix)
	if format == "a2e" {
		req, err := a2e.Export(ch.Doc)
		if err != nil {
			var ee *a2e.ExportError
			if errors.As(err, &ee) {
				return httpcore.Error(httpcore.EINVALID, "not_expressible", err.Error(), ee)
			}
			return err
		}
		// The message is the file of this chain version: its id and ts come
		// from the version, so exporting it again gives the same bytes.
		req.ID = uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("chainstudio:chain/%s/v%d", ch.ID, ch.Version))).String()
		req.Ts = float64(ch.Updated.UnixMicro()) / 1e6
		body, suffix = req, strings.TrimSuffix(suffix, ".chain.json")+".a2e.json"
	}
	b, err := chain.MarshalExport(body)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", contentDisposition(ch.Name+suffix))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// exportVersion is the version an export writes and what it is: version=
// "published" (the default while one is), "draft" (the newest version, what
// the designer shows; the default while nothing is published) or a number
// ("version").
func (s *Chains) exportVersion(c echo.Context) (*store.Chain, string, error) {
	ctx, id := c.Request().Context(), c.Param("id")
	ch, err := s.DB.GetChain(ctx, id)
	if err != nil {
		return nil, "", httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
	}
	v := c.QueryParam("version")
	if v == "" {
		v = "published"
		if ch.Published.Version == 0 {
			v = "draft"
		}
	}
	switch v {
	case "draft":
		return ch, "draft", nil
	case "published":
		if ch.Published.Version == 0 {
			return nil, "", httpcore.Error(httpcore.ECONFLICT, "not_published", fmt.Sprintf("chain %q has never been published: export version=draft, or publish it first", ch.Name), map[string]any{"chain_id": ch.ID})
		}
		if ch.Published.Version == ch.Version {
			return ch, "published", nil
		}
		return s.exportAt(ctx, ch, ch.Published.Version, "published")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be published, draft or a version number, got %q", v), map[string]any{"parameter": "version"})
	}
	return s.exportAt(ctx, ch, n, "version")
}

// exportAt is version n of ch as an export writes it: the A2E file's
// timestamp is when that version was made, so exporting it again gives the
// same bytes.
func (s *Chains) exportAt(ctx context.Context, ch *store.Chain, n int, which string) (*store.Chain, string, error) {
	cv, err := s.DB.GetVersion(ctx, ch.ID, n)
	if err != nil {
		return nil, "", httpcore.StoreErr(err, fmt.Sprintf("version %d of chain %q", n, ch.ID))
	}
	return &store.Chain{ID: ch.ID, Name: cv.Name, Version: cv.Version, NodeCount: cv.NodeCount, Updated: cv.Created, Doc: cv.Doc}, which, nil
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
func (s *Chains) ImportChain(c echo.Context) error {
	body, err := httpcore.ReadBody(c)
	if err != nil {
		return err
	}
	doc, req, err := s.decodeDocumentBytes(body)
	if err != nil {
		// every problem found, not only the first (the import dialog lists the same)
		var ae *httpcore.APIError
		if errors.As(err, &ae) && ae.Code == chain.CodeDecode {
			if d, ok := ae.Details.(map[string]any); ok {
				d["problems"] = ops.DecodeProblems(body, s.Limits)
			} else {
				ae.Details = map[string]any{"problems": ops.DecodeProblems(body, s.Limits)}
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
		return c.JSON(http.StatusOK, map[string]any{"format": format, "doc": doc, "issues": issues, "valid": !chain.HasErrors(issues)})
	default:
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("validate must be \"only\" or absent, got %q", c.QueryParam("validate")), map[string]any{"parameter": "validate"})
	}
	ch, err := s.ImportDoc(c, doc, req, c.QueryParam("message"))
	if err != nil {
		return err
	}
	return s.chainCreated(c, ch)
}

// POST /v1/validate
func (s *Chains) ValidateDocument(c echo.Context) error {
	doc, req, err := s.decodeDocument(c)
	if err != nil {
		return err
	}
	issues := s.validate(c, doc)
	format := "studio"
	if req != nil {
		format = "a2e"
	}
	return c.JSON(http.StatusOK, map[string]any{"issues": issues, "valid": !chain.HasErrors(issues), "format": format})
}

// PATCH /v1/chains/{id}: an chain.Patch (only the changed nodes and edges)
// applied to the version If-Match names, saved as the next version.
func (s *Chains) PatchChain(c echo.Context) error {
	id := c.Param("id")
	body, err := httpcore.ReadBody(c)
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
	doc, err := s.PatchedDoc(c.Request().Context(), id, base, body)
	var de *chain.DecodeError
	switch {
	case errors.As(err, &de):
		return httpcore.Error(httpcore.EBADREQUEST, chain.CodeDecode, "the patch does not apply: "+de.Error(),
			map[string]any{"path": de.Path, "message": de.Msg})
	case err != nil:
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
	}
	return s.saveAndAnswer(c, id, base, doc, c.QueryParam("message"))
}
