package loader

import (
	"fmt"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Catalogs: where a table's current metadata is found and how a new
// version of it is committed. The loader writes the data files, manifests
// and manifest lists itself, into the table's directory in the warehouse,
// under every catalog; what the catalog decides is which metadata is
// current, and it must refuse a commit made from metadata that is no
// longer current, which is what makes a table's commit the run's.

// Catalog types (CatalogConfig.Type).
const (
	// CatalogHadoop is the file-system catalog: vN.metadata.json in the
	// table's metadata directory, the highest current (iceberg_table.go).
	CatalogHadoop = "hadoop"
	// CatalogREST is an Iceberg REST catalog server (iceberg_rest.go).
	CatalogREST = "rest"
)

// CatalogConfig says which catalog holds a run's Iceberg tables.
type CatalogConfig struct {
	// Type is CatalogHadoop (the default) or CatalogREST.
	Type string `yaml:"type" json:"type,omitempty"`
	// URI is a REST catalog's base URL, the part before /v1/.
	URI string `yaml:"uri" json:"uri,omitempty"`
	// Token, if set, is sent to a REST catalog as a bearer token.
	Token string `yaml:"token" json:"-"`
}

// Check refuses an unknown type or a REST catalog without a URI.
func (c CatalogConfig) Check() error {
	switch c.Type {
	case "", CatalogHadoop:
		if c.URI != "" {
			return fmt.Errorf("catalog URI %s given for the %s catalog, which has none (use the rest catalog)", c.URI, CatalogHadoop)
		}
		return nil
	case CatalogREST:
		if c.URI == "" {
			return fmt.Errorf("the %s catalog needs its URI (e.g. http://catalog:8181)", CatalogREST)
		}
		return nil
	default:
		return fmt.Errorf("catalog %q: want %s or %s", c.Type, CatalogHadoop, CatalogREST)
	}
}

// iceCatalog is a catalog of the tables of one warehouse.
type iceCatalog interface {
	// load returns a table's current metadata, or nil if there is no
	// such table yet.
	load(dir string) (*iceMetadata, error)
	// commit makes next the table's current metadata if base (nil: no
	// table) still is, and fails with an error satisfying
	// errors.Is(err, errTableMoved) if it no longer is. Any other error
	// leaves it unknown whether next was committed. fault, if not nil, is
	// called at FaultTableCommit, right before the commit point.
	commit(dir string, base, next *iceMetadata, run string, fault func(FaultPoint) error) error
	// uri names a REST catalog; "" is the file-system catalog.
	uri() string
}

// openCatalog returns the catalog c names over the warehouse w.
func (c CatalogConfig) open(w *warehouse.Batch) (iceCatalog, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.Type == CatalogREST {
		return newRESTCatalog(c, w), nil
	}
	return hadoopCatalog{w: w}, nil
}

// hadoopCatalog is the file-system catalog on the warehouse itself.
type hadoopCatalog struct{ w *warehouse.Batch }

func (c hadoopCatalog) load(dir string) (*iceMetadata, error) { return readIceTable(c.w, dir) }
func (hadoopCatalog) uri() string                             { return "" }

func (c hadoopCatalog) commit(dir string, base, next *iceMetadata, run string, fault func(FaultPoint) error) error {
	n := 1
	if base != nil {
		n = base.version + 1
	}
	return publishIceVersion(c.w, dir, n, next, run, fault)
}
