package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("groups", "show consumer groups and move their committed offsets: groups list|describe|reset-offsets|delete", runGroups)
}

// runGroups speaks only the Kafka protocol, so it works against any broker
// of a cluster (and against Kafka itself), like kafka-consumer-groups.sh.
func runGroups(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("which action? one of: groups list, groups describe GROUP [GROUP ...], groups reset-offsets --group G --to-earliest|--to-latest|--to-offset N, groups delete GROUP [GROUP ...]")
	}
	action, args := args[0], args[1:]
	fs := newFlags("groups")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	groupName := fs.String("group", "", "the group (reset-offsets)")
	topics := fs.String("topic", "", "comma-separated topics to reset; default: every topic the group has committed offsets for (reset-offsets)")
	toEarliest := fs.Bool("to-earliest", false, "reset to the first offset still in each partition (reset-offsets)")
	toLatest := fs.Bool("to-latest", false, "reset to the end of each partition: skip everything not consumed yet (reset-offsets)")
	var toOffset offsetFlag
	fs.Var(&toOffset, "to-offset", "reset every partition to offset `N`, kept within the partition's range (reset-offsets)")
	dryRun := fs.Bool("dry-run", false, "show the new offsets without committing them (reset-offsets)")
	var sec clientFlags
	sec.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cl, err := sec.newKafkaClient(kgo.SeedBrokers(splitList(*brokers)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	switch action {
	case "list":
		return listGroups(ctx, adm)
	case "describe":
		if fs.NArg() == 0 {
			return errors.New("name the groups to describe: groups describe my-app")
		}
		return describeGroups(ctx, adm, fs.Args())
	case "delete":
		if fs.NArg() == 0 {
			return errors.New("name the groups to delete: groups delete my-app")
		}
		return deleteGroups(ctx, adm, fs.Args())
	case "reset-offsets":
		if *groupName == "" && fs.NArg() == 1 {
			*groupName = fs.Arg(0)
		}
		if *groupName == "" {
			return errors.New("name the group: groups reset-offsets --group my-app --to-earliest")
		}
		chosen := 0
		for _, b := range []bool{*toEarliest, *toLatest, toOffset.set} {
			if b {
				chosen++
			}
		}
		if chosen != 1 {
			return errors.New("choose exactly one of --to-earliest, --to-latest, --to-offset N")
		}
		r := reset{group: *groupName, topics: splitList(*topics), earliest: *toEarliest, latest: *toLatest, offset: toOffset.n, dryRun: *dryRun}
		return r.run(ctx, adm)
	}
	return fmt.Errorf("unknown action %q: use list, describe, reset-offsets or delete", action)
}

type offsetFlag struct {
	n   int64
	set bool
}

func (o *offsetFlag) String() string { return fmt.Sprint(o.n) }
func (o *offsetFlag) Set(s string) error {
	if _, err := fmt.Sscan(s, &o.n); err != nil || o.n < 0 {
		return fmt.Errorf("want an offset >= 0, got %q", s)
	}
	o.set = true
	return nil
}

var _ flag.Value = (*offsetFlag)(nil)

func listGroups(ctx context.Context, adm *kadm.Client) error {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSTATE\tPROTOCOL TYPE\tCOORDINATOR")
	for _, g := range listed.Sorted() {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", g.Group, g.State, dash(g.ProtocolType), g.Coordinator)
	}
	return w.Flush()
}

func describeGroups(ctx context.Context, adm *kadm.Client, names []string) error {
	lags, err := adm.Lag(ctx, names...)
	if err != nil {
		return err
	}
	var failed error
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, name := range names {
		l, ok := lags[name]
		switch {
		case !ok:
			failed = errors.Join(failed, fmt.Errorf("group %s: no answer", name))
			continue
		case errors.Is(l.DescribeErr, kerr.GroupIDNotFound):
			failed = errors.Join(failed, fmt.Errorf("group %s does not exist (no members, no committed offsets)", name))
			continue
		case l.Error() != nil:
			failed = errors.Join(failed, fmt.Errorf("group %s: %w", name, l.Error()))
			continue
		}
		fmt.Fprintf(w, "group %s: state %s, protocol %s, %d members, coordinator %d, total lag %d\n",
			name, l.State, dash(l.Protocol), len(l.Members), l.Coordinator.NodeID, l.Lag.Total())
		fmt.Fprintln(w, "TOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tMEMBER\tCLIENT\tHOST")
		for _, p := range l.Lag.Sorted() {
			member, client, host := "-", "-", "-"
			if p.Member != nil {
				member, client, host = p.Member.MemberID, p.Member.ClientID, p.Member.ClientHost
			}
			committed, lag := "-", fmt.Sprint(p.Lag)
			if p.Commit.At >= 0 {
				committed = fmt.Sprint(p.Commit.At)
			}
			if p.Err != nil {
				lag = "error: " + p.Err.Error()
			}
			fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, committed, p.End.Offset, lag, member, client, host)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return failed
}

func deleteGroups(ctx context.Context, adm *kadm.Client, names []string) error {
	resps, err := adm.DeleteGroups(ctx, names...)
	if err != nil {
		return err
	}
	var failed error
	for _, r := range resps.Sorted() {
		switch {
		case errors.Is(r.Err, kerr.NonEmptyGroup):
			failed = errors.Join(failed, fmt.Errorf("group %s still has members: stop its consumers first", r.Group))
		case r.Err != nil:
			failed = errors.Join(failed, fmt.Errorf("group %s: %w", r.Group, r.Err))
		default:
			fmt.Printf("deleted group %s\n", r.Group)
		}
	}
	return failed
}

// reset moves a group's committed offsets. Like Kafka's tool it needs the
// group to have no members: the coordinator refuses commits from outside a
// live group, which would otherwise overwrite them at its next commit.
type reset struct {
	group            string
	topics           []string
	earliest, latest bool
	offset           int64
	dryRun           bool
}

func (r reset) run(ctx context.Context, adm *kadm.Client) error {
	status := newStatusLine(os.Stderr)
	defer status.Done()
	status.Set("reading the committed offsets of group %s", r.group)
	current, err := adm.FetchOffsets(ctx, r.group)
	if err != nil {
		return fmt.Errorf("reading the offsets of group %s: %w", r.group, err)
	}
	if err := current.Error(); err != nil {
		return fmt.Errorf("reading the offsets of group %s: %w", r.group, err)
	}
	topics := r.topics
	if len(topics) == 0 {
		topics = current.Partitions().Topics()
	}
	if len(topics) == 0 {
		return fmt.Errorf("group %s has no committed offsets; name the topics with --topic", r.group)
	}
	status.Set("listing the partitions of %d topic(s)", len(topics))
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("listing the partitions of %s: %w", strings.Join(topics, ", "), err)
	}
	var target kadm.Offsets
	var rows []string
	ends.Each(func(end kadm.ListedOffset) {
		start, _ := starts.Lookup(end.Topic, end.Partition)
		to := r.offset
		switch {
		case r.earliest:
			to = start.Offset
		case r.latest:
			to = end.Offset
		}
		to = min(max(to, start.Offset), end.Offset)
		old := "-"
		if c, ok := current.Lookup(end.Topic, end.Partition); ok && c.At >= 0 {
			old = fmt.Sprint(c.At)
		}
		target.Add(kadm.Offset{Topic: end.Topic, Partition: end.Partition, At: to, LeaderEpoch: -1})
		rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%d", end.Topic, end.Partition, old, to))
	})
	sort.Strings(rows)
	if !r.dryRun {
		status.Set("committing %d new offset(s) of group %s", len(rows), r.group)
		resp, err := adm.CommitOffsets(ctx, r.group, target)
		if err == nil {
			err = resp.Error()
		}
		if errors.Is(err, kerr.UnknownMemberID) {
			return fmt.Errorf("group %s has active members: stop its consumers before resetting its offsets", r.group)
		}
		if err != nil {
			return fmt.Errorf("committing the new offsets of group %s: %w", r.group, err)
		}
	}
	if r.dryRun {
		status.Set("group %s: %d partition(s) to reset (dry run)", r.group, len(rows))
	} else {
		status.Set("group %s: %d partition(s) reset", r.group, len(rows))
	}
	status.Done()
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tOLD\tNEW")
	for _, row := range rows {
		fmt.Fprintln(w, row)
	}
	if r.dryRun {
		fmt.Fprintln(w, "(dry run: nothing committed)")
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
