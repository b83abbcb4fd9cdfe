package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// The Iceberg REST catalog (CatalogConfig.Type "rest"): the protocol of
// Iceberg's REST catalog specification, which Polaris, Lakekeeper, Nessie,
// Gravitino, Unity, AWS Glue and the Apache Iceberg reference server speak.
//
// A table NS.<topic> is loaded with GET .../namespaces/NS/tables/<topic>
// and committed with POST to the same path (the commit-table endpoint):
// the request names what must still hold (requirements) and what changes
// (updates, computed by comparing the metadata the run read with the one
// it built). The requirements are the fence: the table's UUID, and its
// main branch still at the snapshot the run read. The server applies the
// updates only if they hold, and its own commit is atomic against its
// backing store (for the reference server, a compare-and-set of the
// metadata location), so of two loaders that read the same snapshot one
// commits and the other gets 409 (errTableMoved). A new table is created
// by the same endpoint with the assert-create requirement, carrying its
// schema with the loader's own field ids (a create-table request would
// have the server assign fresh ones, which the name mapping and the next
// schema versions depend on).
//
// The catalog decides which metadata is current and writes the metadata
// files; the loader still writes data files, manifests and manifest lists
// into the table's location, which must be the warehouse's
// <NS>/<topic>: the catalog server and the loader share the storage.

// restTimeout bounds one request to the catalog.
const restTimeout = 30 * time.Second

type restCatalog struct {
	base  string // URI without a trailing slash
	token string
	w     warehouse.FS
	http  *http.Client

	once   sync.Once
	prefix string // from GET /v1/config's overrides, "" or ending in "/"
	err    error
}

func newRESTCatalog(c CatalogConfig, w warehouse.FS) *restCatalog {
	return &restCatalog{base: strings.TrimSuffix(c.URI, "/"), token: c.Token, w: w, http: &http.Client{Timeout: restTimeout}}
}

func (c *restCatalog) uri() string { return c.base }

// restError is an error the catalog answered with.
type restError struct {
	Status  int
	Message string
	Type    string
}

func (e *restError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

// call sends one request; out, if not nil, receives a 200's JSON body.
func (c *restCatalog) call(method, p string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), restTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/v1/"+p, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("REST catalog %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxIceMetaFile+1))
	if err != nil {
		return fmt.Errorf("REST catalog %s: %s %s: %w", c.base, method, p, err)
	}
	if len(data) > maxIceMetaFile {
		return fmt.Errorf("REST catalog %s: %s %s: the answer is larger than %d bytes", c.base, method, p, maxIceMetaFile)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		json.Unmarshal(data, &e)
		if e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(data))
		}
		return &restError{Status: resp.StatusCode, Message: e.Error.Message, Type: e.Error.Type}
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("REST catalog %s: %s %s: %w", c.base, method, p, err)
		}
	}
	return nil
}

// tablePath is the path of the table in dir (NS/topic), under the prefix
// the catalog's configuration gives.
func (c *restCatalog) tablePath(dir string) (ns, name, p string, err error) {
	c.once.Do(func() {
		var cfg struct {
			Overrides map[string]string `json:"overrides"`
			Defaults  map[string]string `json:"defaults"`
		}
		if c.err = c.call(http.MethodGet, "config", nil, &cfg); c.err != nil {
			c.err = fmt.Errorf("REST catalog %s: reading its configuration: %w", c.base, c.err)
			return
		}
		prefix := cfg.Overrides["prefix"]
		if prefix == "" {
			prefix = cfg.Defaults["prefix"]
		}
		if prefix != "" {
			c.prefix = strings.Trim(prefix, "/") + "/"
		}
	})
	if c.err != nil {
		return "", "", "", c.err
	}
	ns, name = path.Split(dir)
	ns = strings.TrimSuffix(ns, "/")
	return ns, name, c.prefix + "namespaces/" + url.PathEscape(ns) + "/tables/" + url.PathEscape(name), nil
}

// load reads the table's current metadata; the catalog must keep it where
// the loader writes its files.
func (c *restCatalog) load(dir string) (*iceMetadata, error) {
	_, _, p, err := c.tablePath(dir)
	if err != nil {
		return nil, err
	}
	var res struct {
		Location string          `json:"metadata-location"`
		Metadata json.RawMessage `json:"metadata"`
	}
	err = c.call(http.MethodGet, p, nil, &res)
	var re *restError
	if errors.As(err, &re) && re.Status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: loading it from the REST catalog: %w", dir, err)
	}
	md := &iceMetadata{}
	if err := json.Unmarshal(res.Metadata, md); err != nil {
		return nil, fmt.Errorf("table %s: the REST catalog's metadata: %w", dir, err)
	}
	if md.FormatVersion != 2 {
		return nil, fmt.Errorf("table %s: the REST catalog holds a format version %d table; the loader writes version 2 tables", dir, md.FormatVersion)
	}
	if want := iceRoot(c.w) + "/" + dir; strings.TrimSuffix(md.Location, "/") != want {
		return nil, fmt.Errorf("table %s: the REST catalog keeps it at %s, but the loader writes its files under %s: load into the catalog's warehouse, or move the table there", dir, md.Location, want)
	}
	md.file = res.Location
	return md, nil
}

// commit sends next as the changes from base, with base's main branch and
// UUID as requirements (or, for a new table, that it does not exist).
func (c *restCatalog) commit(dir string, base, next *iceMetadata, run string, fault func(FaultPoint) error) error {
	ns, name, p, err := c.tablePath(dir)
	if err != nil {
		return err
	}
	if base == nil {
		// The namespace may exist already: 409 is as good as 200.
		err := c.call(http.MethodPost, c.prefix+"namespaces", map[string]any{"namespace": []string{ns}, "properties": map[string]string{}}, nil)
		var re *restError
		if err != nil && !(errors.As(err, &re) && re.Status == http.StatusConflict) {
			return fmt.Errorf("table %s: creating namespace %s in the REST catalog: %w", dir, ns, err)
		}
	}
	req := map[string]any{
		"identifier":   map[string]any{"namespace": []string{ns}, "name": name},
		"requirements": restRequirements(base),
		"updates":      restUpdates(base, next),
	}
	if fault != nil {
		if err := fault(FaultTableCommit); err != nil {
			return err
		}
	}
	err = c.call(http.MethodPost, p, req, nil)
	var re *restError
	if errors.As(err, &re) && re.Status == http.StatusConflict {
		return fmt.Errorf("table %s: the REST catalog refused the commit (%v): not committing (%w)", dir, err, errTableMoved)
	}
	if err != nil {
		return fmt.Errorf("table %s: committing to the REST catalog (whether it committed is unknown; the next run finds out): %w", dir, err)
	}
	return nil
}

func restRequirements(base *iceMetadata) []map[string]any {
	if base == nil {
		return []map[string]any{{"type": "assert-create"}}
	}
	var main any // null: the branch must not exist
	if ref, ok := base.Refs["main"]; ok {
		main = ref.SnapshotID
	}
	return []map[string]any{
		{"type": "assert-table-uuid", "uuid": base.TableUUID},
		{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": main},
	}
}

// restUpdates are the REST catalog's updates that make next of base (nil:
// a new table). What the loader changes in a table: schemas, its one
// partition spec, properties, snapshots added and removed, refs. The
// logs and timestamps are the catalog's to keep.
func restUpdates(base, next *iceMetadata) []map[string]any {
	var u []map[string]any
	add := func(action string, kv ...any) {
		m := map[string]any{"action": action}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		u = append(u, m)
	}
	old := base
	if old == nil {
		old = &iceMetadata{CurrentSchemaID: -1, DefaultSpecID: -1}
		add("assign-uuid", "uuid", next.TableUUID)
		add("upgrade-format-version", "format-version", 2)
		add("set-location", "location", next.Location)
	}
	schemas := map[int]bool{}
	for _, s := range old.Schemas {
		schemas[s.SchemaID] = true
	}
	// A schema or spec added here is made current as "the last added"
	// (-1): the catalog may number it otherwise than the loader did.
	current := next.CurrentSchemaID
	for _, s := range next.Schemas {
		if !schemas[s.SchemaID] {
			add("add-schema", "schema", s, "last-column-id", next.LastColumnID)
			if s.SchemaID == current {
				current = -1
			}
		}
	}
	if next.CurrentSchemaID != old.CurrentSchemaID {
		add("set-current-schema", "schema-id", current)
	}
	specs := map[int]bool{}
	for _, raw := range old.PartitionSpecs {
		var s struct {
			ID int `json:"spec-id"`
		}
		json.Unmarshal(raw, &s)
		specs[s.ID] = true
	}
	spec := next.DefaultSpecID
	for _, raw := range next.PartitionSpecs {
		var s struct {
			ID int `json:"spec-id"`
		}
		json.Unmarshal(raw, &s)
		if !specs[s.ID] {
			add("add-spec", "spec", raw)
			if s.ID == spec {
				spec = -1
			}
		}
	}
	if base == nil || next.DefaultSpecID != old.DefaultSpecID {
		add("set-default-spec", "spec-id", spec)
	}
	if base == nil {
		add("add-sort-order", "sort-order", json.RawMessage(`{"order-id":0,"fields":[]}`))
		add("set-default-sort-order", "sort-order-id", 0)
	}
	set := map[string]string{}
	for k, v := range next.Properties {
		if ov, ok := old.Properties[k]; !ok || ov != v {
			set[k] = v
		}
	}
	if len(set) > 0 {
		add("set-properties", "updates", set)
	}
	var removed []string
	for k := range old.Properties {
		if _, ok := next.Properties[k]; !ok {
			removed = append(removed, k)
		}
	}
	if len(removed) > 0 {
		sort.Strings(removed)
		add("remove-properties", "removals", removed)
	}
	had := map[int64]bool{}
	for _, s := range old.Snapshots {
		had[s.SnapshotID] = true
	}
	has := map[int64]bool{}
	for _, s := range next.Snapshots {
		has[s.SnapshotID] = true
		if !had[s.SnapshotID] {
			add("add-snapshot", "snapshot", s)
		}
	}
	names := slices.Sorted(maps.Keys(next.Refs))
	for _, name := range names {
		ref := next.Refs[name]
		if o, ok := old.Refs[name]; !ok || o != ref {
			add("set-snapshot-ref", "ref-name", name, "type", ref.Type, "snapshot-id", ref.SnapshotID)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old.Refs)) {
		if _, ok := next.Refs[name]; !ok {
			add("remove-snapshot-ref", "ref-name", name)
		}
	}
	var gone []int64
	for _, s := range old.Snapshots {
		if !has[s.SnapshotID] {
			gone = append(gone, s.SnapshotID)
		}
	}
	if len(gone) > 0 {
		add("remove-snapshots", "snapshot-ids", gone)
	}
	return u
}
