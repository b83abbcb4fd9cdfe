package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/clientsec"
)

func init() {
	register("schema", "register, get, list or check Avro and JSON schemas: schema register|get|list|check", runSchema)
}

func runSchema(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("which action? schema register|get|list|check [flags]")
	}
	action, args := args[0], args[1:]
	fs := newFlags("schema")
	url := fs.String("registry", "http://127.0.0.1:8081", "schema registry URL")
	subject := fs.String("subject", "", "subject, e.g. pageviews-value")
	file := fs.String("file", "", "schema file (Avro .avsc, or a JSON schema with --type json) for register and check")
	typ := fs.String("type", "avro", "schema type of --file: avro or json (JSON Schema)")
	version := fs.String("version", "latest", "version for get and check: a number or latest")
	id := fs.Int("id", 0, "global schema id for get")
	var sec clientsec.Registry
	sec.Register(fs, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cl, err := registryClient("--registry", *url, sec)
	if err != nil {
		return err
	}
	readSchema := func() (sr.Schema, error) {
		if *file == "" || *subject == "" {
			return sr.Schema{}, fmt.Errorf("%s needs --subject and --file", action)
		}
		text, err := os.ReadFile(*file)
		if err != nil {
			return sr.Schema{}, err
		}
		switch strings.ToLower(*typ) {
		case "avro":
			return sr.Schema{Schema: string(text), Type: sr.TypeAvro}, nil
		case "json":
			return sr.Schema{Schema: string(text), Type: sr.TypeJSON}, nil
		}
		return sr.Schema{}, fmt.Errorf("--type %q: use avro or json", *typ)
	}
	ver := -1
	if *version != "latest" {
		if ver, err = strconv.Atoi(*version); err != nil || ver < 1 {
			return fmt.Errorf("--version %q: use a positive number or latest", *version)
		}
	}
	switch action {
	case "register":
		s, err := readSchema()
		if err != nil {
			return err
		}
		ss, err := cl.CreateSchema(ctx, *subject, s)
		if err != nil {
			return err
		}
		fmt.Printf("subject %s version %d id %d\n", ss.Subject, ss.Version, ss.ID)
		return nil
	case "get":
		if *id > 0 {
			s, err := cl.SchemaByID(ctx, *id)
			if err != nil {
				return err
			}
			fmt.Println(s.Schema)
			return nil
		}
		if *subject == "" {
			return errors.New("get needs --id, or --subject (and --version)")
		}
		ss, err := cl.SchemaByVersion(ctx, *subject, ver)
		if err != nil {
			return err
		}
		fmt.Printf("# subject %s version %d id %d\n%s\n", ss.Subject, ss.Version, ss.ID, ss.Schema.Schema)
		return nil
	case "list":
		if *subject != "" {
			versions, err := cl.SubjectVersions(ctx, *subject)
			if err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(versions)
		}
		subjects, err := cl.Subjects(ctx)
		if err != nil {
			return err
		}
		for _, s := range subjects {
			fmt.Println(s)
		}
		return nil
	case "check":
		s, err := readSchema()
		if err != nil {
			return err
		}
		// Verbose: the registry says why a schema is incompatible.
		res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), *subject, ver, s)
		if err != nil {
			return err
		}
		if !res.Is {
			fmt.Printf("incompatible with %s version %s:\n", *subject, *version)
			for _, m := range res.Messages {
				fmt.Println("  " + m)
			}
			if len(res.Messages) == 0 {
				fmt.Println("  (the registry gave no reason)")
			}
			return exitError(1)
		}
		fmt.Printf("compatible with %s version %s\n", *subject, *version)
		return nil
	}
	return fmt.Errorf("unknown action %q: use register, get, list or check", action)
}
