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
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("quotas", "set, describe or delete client byte-rate quotas: quotas set|describe|delete", runQuotas)
}

// The quota keys the broker enforces, and the entity types it keys them by
// (Kafka's names, so that kafka-configs shows the same entries).
const (
	keyProducerByteRate = "producer_byte_rate"
	keyConsumerByteRate = "consumer_byte_rate"
	entityUser          = "user"
	entityClientID      = "client-id"
)

// quotaEntityFlags name one quota entity: a user or the default user,
// and/or a client id or the default client id.
type quotaEntityFlags struct {
	user, clientID           string
	defaultUser, defaultClnt bool
}

func (f *quotaEntityFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.user, "user", "", "the quota's user `name` (a SASL user or a TLS certificate's CN)")
	fs.StringVar(&f.clientID, "client-id", "", "the quota's client `id`")
	fs.BoolVar(&f.defaultUser, "default-user", false, "the default of every user without a quota of their own")
	fs.BoolVar(&f.defaultClnt, "default-client", false, "the default of every client id without a quota of its own")
}

// entity is the entity the flags name; an empty entity names none.
func (f *quotaEntityFlags) entity() (kadm.ClientQuotaEntity, error) {
	if f.user != "" && f.defaultUser {
		return nil, errors.New("--user and --default-user: give one")
	}
	if f.clientID != "" && f.defaultClnt {
		return nil, errors.New("--client-id and --default-client: give one")
	}
	var e kadm.ClientQuotaEntity
	switch {
	case f.user != "":
		e = append(e, kadm.ClientQuotaEntityComponent{Type: entityUser, Name: &f.user})
	case f.defaultUser:
		e = append(e, kadm.ClientQuotaEntityComponent{Type: entityUser})
	}
	switch {
	case f.clientID != "":
		e = append(e, kadm.ClientQuotaEntityComponent{Type: entityClientID, Name: &f.clientID})
	case f.defaultClnt:
		e = append(e, kadm.ClientQuotaEntityComponent{Type: entityClientID})
	}
	return e, nil
}

// runQuotas manages quotas online through AlterClientQuotas and
// DescribeClientQuotas, as `kafka-configs --entity-type users|clients`
// does, so it works on a standalone broker and a cluster alike and needs
// ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster under an authorizer.
func runQuotas(ctx context.Context, args []string) error {
	const usage = "quotas set (--user U | --default-user) [--client-id C | --default-client] [--producer-byte-rate N] [--consumer-byte-rate N]; quotas describe [entity flags]; quotas delete <entity flags>"
	if len(args) == 0 {
		return errors.New("which action? " + usage)
	}
	action, args := args[0], args[1:]
	fs := newFlags("quotas")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	var ef quotaEntityFlags
	ef.register(fs)
	producerRate := fs.Int64("producer-byte-rate", 0, "bytes a second the entity's clients may produce (set)")
	consumerRate := fs.Int64("consumer-byte-rate", 0, "bytes a second the entity's clients may fetch (set)")
	var sec clientFlags
	sec.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %s", fs.Args(), usage)
	}
	entity, err := ef.entity()
	if err != nil {
		return err
	}
	cl, err := sec.newKafkaClient(kgo.SeedBrokers(splitList(*brokers)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	switch action {
	case "set":
		if len(entity) == 0 {
			return errors.New("quotas set needs an entity: --user, --client-id, --default-user or --default-client")
		}
		var ops []kadm.AlterClientQuotaOp
		for _, r := range []struct {
			flag, key string
			v         int64
		}{{"producer-byte-rate", keyProducerByteRate, *producerRate}, {"consumer-byte-rate", keyConsumerByteRate, *consumerRate}} {
			if !flagGiven(fs, r.flag) {
				continue
			}
			if r.v < 1 {
				return fmt.Errorf("--%s %d: a rate is a whole number of bytes a second, at least 1 (quotas delete removes it)", r.flag, r.v)
			}
			ops = append(ops, kadm.AlterClientQuotaOp{Key: r.key, Value: float64(r.v)})
		}
		if len(ops) == 0 {
			return errors.New("quotas set needs --producer-byte-rate and/or --consumer-byte-rate")
		}
		return alterQuotas(ctx, adm, entity, ops, "set")
	case "delete":
		if len(entity) == 0 {
			return errors.New("quotas delete needs an entity: --user, --client-id, --default-user or --default-client")
		}
		// Both rates go unless only one is named; the values are ignored.
		var ops []kadm.AlterClientQuotaOp
		if flagGiven(fs, "producer-byte-rate") || !flagGiven(fs, "consumer-byte-rate") {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: keyProducerByteRate, Remove: true})
		}
		if flagGiven(fs, "consumer-byte-rate") || !flagGiven(fs, "producer-byte-rate") {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: keyConsumerByteRate, Remove: true})
		}
		return alterQuotas(ctx, adm, entity, ops, "deleted")
	case "describe":
		return describeQuotas(ctx, adm, entity)
	}
	return fmt.Errorf("unknown action %q: %s", action, usage)
}

func alterQuotas(ctx context.Context, adm *kadm.Client, entity kadm.ClientQuotaEntity, ops []kadm.AlterClientQuotaOp, done string) error {
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return fmt.Errorf("altering quotas of %s: %w", entity, err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("altering quotas of %s: %w: %s", entity, r.Err, r.ErrMessage)
		}
	}
	var keys []string
	for _, op := range ops {
		if op.Remove {
			keys = append(keys, op.Key)
		} else {
			keys = append(keys, fmt.Sprintf("%s=%d", op.Key, int64(op.Value)))
		}
	}
	fmt.Printf("quotas of %s %s: %s\n", entity, done, strings.Join(keys, ", "))
	return nil
}

// describeQuotas prints one line per entity matching the filter: every
// entity when it is empty, else those with exactly the named parts (a
// --user filter alone also shows that user's per-client-id quotas).
func describeQuotas(ctx context.Context, adm *kadm.Client, filter kadm.ClientQuotaEntity) error {
	var comps []kadm.DescribeClientQuotaComponent
	for _, c := range filter {
		dc := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name}
		if c.Name == nil {
			dc.MatchType = 1 // the default
		}
		comps = append(comps, dc)
	}
	var found kadm.DescribedClientQuotas
	if len(comps) > 0 {
		qs, err := adm.DescribeClientQuotas(ctx, false, comps)
		if err != nil {
			return fmt.Errorf("describing quotas: %w", err)
		}
		found = qs
	} else {
		// Every entity has a user part or a client-id part: ask for each
		// and merge.
		seen := map[string]bool{}
		for _, typ := range []string{entityUser, entityClientID} {
			qs, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: typ, MatchType: 2}})
			if err != nil {
				return fmt.Errorf("describing quotas: %w", err)
			}
			for _, q := range qs {
				if k := entityKey(q.Entity); !seen[k] {
					seen[k] = true
					found = append(found, q)
				}
			}
		}
	}
	lines := make([]string, 0, len(found))
	for _, q := range found {
		vals := make([]string, 0, len(q.Values))
		for _, v := range q.Values {
			vals = append(vals, fmt.Sprintf("%s=%d", v.Key, int64(v.Value)))
		}
		sort.Strings(vals)
		lines = append(lines, entityKey(q.Entity)+"\t"+strings.Join(vals, " "))
	}
	sort.Strings(lines)
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	return tw.Flush()
}

// entityKey prints an entity as user=<name> client-id=<name>, in that
// order, with <default> for a default part.
func entityKey(e kadm.ClientQuotaEntity) string {
	parts := make([]string, 0, len(e))
	for _, typ := range []string{entityUser, entityClientID} {
		for _, c := range e {
			if c.Type == typ {
				parts = append(parts, c.String())
			}
		}
	}
	return strings.Join(parts, " ")
}
