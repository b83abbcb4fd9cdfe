package main

import (
	"flag"
	"os"

	"github.com/tributary-io/tributary/loader"
)

// catalogTokenEnv holds a REST catalog's bearer token: an environment
// variable rather than a flag, which every user of the machine could read
// in the process list.
const catalogTokenEnv = "TRIBUTARY_CATALOG_TOKEN"

// catalogFlags name the catalog of Iceberg tables (loader.CatalogConfig);
// load, compact and expire take them.
type catalogFlags struct{ typ, uri string }

func (f *catalogFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.typ, "catalog", loader.CatalogHadoop, "catalog of the --table tables: hadoop (the file-system catalog on the warehouse) or rest (an Iceberg REST catalog at --catalog-uri, with the bearer token in "+catalogTokenEnv+" if it wants one)")
	fs.StringVar(&f.uri, "catalog-uri", "", "base `URL` of the Iceberg REST catalog (the part before /v1/), with --catalog rest")
}

func (f *catalogFlags) config() loader.CatalogConfig {
	c := loader.CatalogConfig{Type: f.typ, URI: f.uri, Token: os.Getenv(catalogTokenEnv)}
	if c.Type == loader.CatalogHadoop && c.URI == "" {
		return loader.CatalogConfig{} // the default
	}
	return c
}
