package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tributary-io/tributary/loader"
)

// runAuditRepublish publishes the loader's counts kept in a warehouse's
// committed manifests (loader.PublishAudit).
func runAuditRepublish(ctx context.Context, args []string) error {
	fs, f := newAuditFlags("republish", "publish the warehouse tier's counts of committed load runs from their manifests")
	wh := fs.String("warehouse", "", "warehouse `URL` whose load runs' counts to publish: file:///path or hdfs://namenode:port/path (required)")
	all := fs.Bool("all", false, "also the runs whose counts were already published: restores what the audit topic lost, a no-op for the rest")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *wh == "" {
		return errors.New("--warehouse is required")
	}
	if f.topics != "" {
		return errors.New("--topics: a run's counts are published whole, whatever topics it loaded; leave it out")
	}
	cfg := loader.Config{
		Brokers: splitList(f.brokers), RegistryURL: f.registry, Warehouse: *wh,
		// Each run's counts keep the window they were counted in.
		Audit:    &loader.AuditConfig{Topic: f.topic},
		Security: f.sec.kafka, RegistrySecurity: f.sec.registry,
	}
	runs, err := loader.PublishAudit(ctx, cfg, *all)
	for _, r := range runs {
		fmt.Printf("published the counts of run %s\n", r)
	}
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		fmt.Fprintln(os.Stderr, "no committed run with counts to publish")
	}
	return nil
}
