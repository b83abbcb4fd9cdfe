package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register("acls", "add, list or remove the brokers' ACLs: acls add|list|remove", runACLs)
}

// aclFlags name ACLs: who (--allow/--deny, --host), what (--operation)
// and on which resources. For add they are the ACLs to create, every
// combination of them; for list and remove a filter, where a field left
// out matches anything.
type aclFlags struct {
	allow, deny, hosts, ops multiFlag
	topics, groups, txnIDs  multiFlag
	cluster, prefixed       bool
	// Set by check: the operations parsed, and whether any resource
	// flag was given.
	parsedOps     []kadm.ACLOperation
	resourceGiven bool
}

func (f *aclFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.allow, "allow", "`principal` (User:<name>, or User:* for every user) the ACLs allow; repeatable")
	fs.Var(&f.deny, "deny", "`principal` the ACLs deny (a matching deny wins over any allow); repeatable")
	fs.Var(&f.hosts, "host", "client IP `address` the ACLs apply to; repeatable (add: default *, any host; list, remove: default any)")
	fs.Var(&f.ops, "operation", "`operation`s, repeatable or comma-separated: read, write, create, delete, alter, describe, describe_configs, alter_configs, idempotent_write, cluster_action, all")
	fs.Var(&f.topics, "topic", "topic `name` (* for every topic); repeatable")
	fs.Var(&f.groups, "group", "consumer group `id` (* for every group); repeatable")
	fs.Var(&f.txnIDs, "transactional-id", "transactional `id` of a producer; repeatable")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster itself (creating topics, managing ACLs, users and quotas, idempotent produce)")
	fs.BoolVar(&f.prefixed, "prefixed", false, "the topic, group and transactional id names are prefixes: the ACL covers every name starting with one")
}

// check validates the flags before any connection, so a typo is an error
// naming the flag rather than a broker's INVALID_REQUEST.
func (f *aclFlags) check(create bool) error {
	for _, set := range []struct {
		flag string
		ps   []string
	}{{"allow", f.allow}, {"deny", f.deny}} {
		for _, p := range set.ps {
			if name, ok := strings.CutPrefix(p, "User:"); !ok || name == "" {
				return fmt.Errorf("--%s %q: a principal is User:<name> (a SASL user or a client certificate's CN), or User:* for every user", set.flag, p)
			}
		}
	}
	for _, h := range f.hosts {
		if h != "*" && net.ParseIP(h) == nil {
			return fmt.Errorf("--host %q: give a client's IP address, or * for any host (the broker compares the address a client connects from, not names)", h)
		}
	}
	for _, list := range f.ops {
		for _, s := range splitList(list) {
			op, err := kmsg.ParseACLOperation(s)
			if err != nil || op == kmsg.ACLOperationUnknown || (create && op == kmsg.ACLOperationAny) {
				return fmt.Errorf("--operation %q: use read, write, create, delete, alter, describe, describe_configs, alter_configs, idempotent_write, cluster_action or all", s)
			}
			f.parsedOps = append(f.parsedOps, op)
		}
	}
	for _, set := range []struct {
		flag  string
		names []string
	}{{"topic", f.topics}, {"group", f.groups}, {"transactional-id", f.txnIDs}} {
		for _, n := range set.names {
			if n == "" {
				return fmt.Errorf("--%s: the name is empty", set.flag)
			}
		}
	}
	f.resourceGiven = f.cluster || len(f.topics)+len(f.groups)+len(f.txnIDs) > 0
	if f.prefixed && f.cluster {
		return errors.New("--prefixed with --cluster: the cluster has one name; give the prefixed resources and the cluster in two commands")
	}
	if f.prefixed && !f.resourceGiven && create {
		return errors.New("--prefixed needs --topic, --group or --transactional-id: the prefix to cover")
	}
	if !create {
		return nil
	}
	switch {
	case len(f.allow)+len(f.deny) == 0:
		return errors.New("acls add needs a principal: --allow User:<name> or --deny User:<name>")
	case len(f.parsedOps) == 0:
		return errors.New("acls add needs --operation (read, write, describe, ... or all)")
	case !f.resourceGiven:
		return errors.New("acls add needs a resource: --topic, --group, --cluster or --transactional-id")
	}
	return nil
}

// creation is the builder of the ACLs to add.
func (f *aclFlags) creation() *kadm.ACLBuilder {
	hosts := []string(f.hosts)
	if len(hosts) == 0 {
		hosts = []string{"*"}
	}
	b := kadm.NewACLs().MaybeAllow(f.allow...).MaybeDeny(f.deny...)
	if len(f.allow) > 0 {
		b.MaybeAllowHosts(hosts...)
	}
	if len(f.deny) > 0 {
		b.MaybeDenyHosts(hosts...)
	}
	f.resources(b)
	return b.Operations(f.parsedOps...).ResourcePatternType(f.pattern())
}

// filter is the builder matching the ACLs the flags name: every field
// not given matches anything.
func (f *aclFlags) filter() *kadm.ACLBuilder {
	b := kadm.NewACLs()
	if len(f.allow)+len(f.deny) == 0 {
		// Any principal, allowed or denied (kadm collapses the two into
		// one filter when the hosts are any too).
		b.Allow().Deny().AllowHosts(f.hosts...).DenyHosts(f.hosts...)
	}
	if len(f.allow) > 0 {
		b.MaybeAllow(f.allow...).AllowHosts(f.hosts...)
	}
	if len(f.deny) > 0 {
		b.MaybeDeny(f.deny...).DenyHosts(f.hosts...)
	}
	if f.resourceGiven {
		f.resources(b)
	} else {
		b.AnyResource()
	}
	return b.Operations(f.parsedOps...).ResourcePatternType(f.pattern())
}

func (f *aclFlags) resources(b *kadm.ACLBuilder) {
	b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeTransactionalIDs(f.txnIDs...).MaybeClusters(f.cluster)
}

// pattern is how the resource names match: literally unless --prefixed;
// a filter without resources matches both kinds.
func (f *aclFlags) pattern() kadm.ACLPattern {
	switch {
	case f.prefixed:
		return kadm.ACLPatternPrefixed
	case !f.resourceGiven:
		return kadm.ACLPatternAny
	}
	return kadm.ACLPatternLiteral
}

// runACLs manages ACLs online through CreateAcls, DescribeAcls and
// DeleteAcls, as kafka-acls does, so users need no Java tools. The
// brokers answer only with --authorizer on, and only to a principal with
// ALTER (add, remove) or DESCRIBE (list) on the cluster: a super user to
// begin with.
func runACLs(ctx context.Context, args []string) error {
	const usage = "acls add (--allow|--deny) User:NAME --operation OP[,OP] <resource> [--host IP] [--prefixed]; acls list [filter flags]; acls remove <filter flags>; resources: --topic T, --group G, --transactional-id X, --cluster"
	if len(args) == 0 {
		return errors.New("which action? " + usage)
	}
	action, args := args[0], args[1:]
	fs := newFlags("acls")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	var af aclFlags
	af.register(fs)
	var sec clientFlags
	sec.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %s", fs.Args(), usage)
	}
	switch action {
	case "add", "list", "remove":
	default:
		return fmt.Errorf("unknown action %q: %s", action, usage)
	}
	if err := af.check(action == "add"); err != nil {
		return err
	}
	if action == "remove" && len(af.allow)+len(af.deny) == 0 && !af.resourceGiven {
		return errors.New("acls remove needs a principal (--allow, --deny) or a resource (--topic, --group, --cluster, --transactional-id): it removes every ACL that matches")
	}
	cl, err := sec.newKafkaClient(kgo.SeedBrokers(splitList(*brokers)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	switch action {
	case "add":
		return addACLs(ctx, adm, af.creation())
	case "list":
		return listACLs(ctx, adm, af.filter())
	}
	return removeACLs(ctx, adm, af.filter())
}

func addACLs(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) error {
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("adding ACLs: %w", err)
	}
	var failed []error
	for _, r := range res {
		acl := aclLine{r.Permission, r.Principal, r.Host, r.Operation, r.Type, r.Pattern, r.Name}
		if r.Err != nil {
			failed = append(failed, fmt.Errorf("adding %s: %w%s", acl, r.Err, detail(r.ErrMessage)))
			continue
		}
		fmt.Printf("added: %s\n", acl)
	}
	return errors.Join(failed...)
}

func listACLs(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) error {
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("listing ACLs: %w", err)
	}
	seen := map[aclLine]bool{}
	var acls []aclLine
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("listing ACLs: %w%s", r.Err, detail(r.ErrMessage))
		}
		for _, d := range r.Described {
			acl := aclLine{d.Permission, d.Principal, d.Host, d.Operation, d.Type, d.Pattern, d.Name}
			if !seen[acl] {
				seen[acl] = true
				acls = append(acls, acl)
			}
		}
	}
	sort.Slice(acls, func(i, j int) bool { return acls[i].sortKey() < acls[j].sortKey() })
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PERMISSION\tPRINCIPAL\tHOST\tOPERATION\tRESOURCE\tPATTERN\tNAME")
	for _, a := range acls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.perm, a.principal, a.host, a.op, resourceName(a.typ), strings.ToLower(a.pattern.String()), a.name)
	}
	return tw.Flush()
}

func removeACLs(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) error {
	res, err := adm.DeleteACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("removing ACLs: %w", err)
	}
	var failed []error
	removed := 0
	for _, r := range res {
		if r.Err != nil {
			failed = append(failed, fmt.Errorf("removing ACLs: %w%s", r.Err, detail(r.ErrMessage)))
			continue
		}
		for _, d := range r.Deleted {
			acl := aclLine{d.Permission, d.Principal, d.Host, d.Operation, d.Type, d.Pattern, d.Name}
			if d.Err != nil {
				failed = append(failed, fmt.Errorf("removing %s: %w%s", acl, d.Err, detail(d.ErrMessage)))
				continue
			}
			removed++
			fmt.Printf("removed: %s\n", acl)
		}
	}
	if removed == 0 && len(failed) == 0 {
		fmt.Println("no ACL matches: nothing removed")
	}
	return errors.Join(failed...)
}

// aclLine is one ACL as the command prints it.
type aclLine struct {
	perm      kmsg.ACLPermissionType
	principal string
	host      string
	op        kadm.ACLOperation
	typ       kmsg.ACLResourceType
	pattern   kadm.ACLPattern
	name      string
}

// String reads as a sentence: ALLOW User:alice from * to WRITE topic orders.
func (a aclLine) String() string {
	s := fmt.Sprintf("%s %s from %s to %s %s %s", a.perm, a.principal, a.host, a.op, resourceName(a.typ), a.name)
	if a.pattern == kadm.ACLPatternPrefixed {
		s += " (prefixed)"
	}
	return s
}

func (a aclLine) sortKey() string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", resourceName(a.typ), a.name, a.pattern, a.principal, a.perm, a.op, a.host)
}

// resourceName is a resource type as its flag spells it.
func resourceName(t kmsg.ACLResourceType) string {
	return strings.ReplaceAll(strings.ToLower(t.String()), "_", "-")
}

// detail is a broker's error message, when it gave one.
func detail(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
