package main

// topics elect-leaders, reassign and reassignments: the replicated
// partitions' leaders and placement, through ElectLeaders,
// AlterPartitionReassignments and ListPartitionReassignments (a move's
// throttle: topics_throttle.go).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// replicaFlags are the flags of elect-leaders and reassign.
type replicaFlags struct {
	topic     *string
	partition *int
	replicas  *string
	unclean   *bool
	cancel    *bool
	verify    *bool
	throttle  *int64
}

func (f *replicaFlags) register(fs *flag.FlagSet) {
	f.topic = fs.String("topic", "", "topic of elect-leaders (default: every replicated topic) or reassign")
	f.partition = fs.Int("partition", -1, "partition to reassign")
	f.replicas = fs.String("replicas", "", "reassign: the partition's new replicas, comma-separated broker ids, preferred leader first")
	f.unclean = fs.Bool("unclean", false, "elect-leaders: let a live replica outside the ISR lead a leaderless partition (whatever unclean.leader.election.enable says, this once; may lose acknowledged records)")
	f.cancel = fs.Bool("cancel", false, "reassign: cancel the partition's reassignment")
	f.verify = fs.Bool("verify", false, "reassign: check that the partition's move is done (exit 1 while it is not), then lift its throttle")
	f.throttle = fs.Int64("throttle", 0, "reassign with --replicas: hold the copying to `BYTES_PER_SEC` on every broker involved, until --verify finds the move done")
}

func electLeaders(ctx context.Context, adm *kadm.Client, f replicaFlags) error {
	var set kadm.TopicsSet
	if *f.topic != "" {
		details, err := adm.ListTopics(ctx, *f.topic)
		if err != nil {
			return err
		}
		d, ok := details[*f.topic]
		if !ok || d.Err != nil {
			return fmt.Errorf("topic %s: %v", *f.topic, d.Err)
		}
		for p := range d.Partitions {
			set.Add(*f.topic, p)
		}
	}
	how := kadm.ElectPreferredReplica
	if *f.unclean {
		how = kadm.ElectLiveReplica
	}
	res, err := adm.ElectLeaders(ctx, how, set)
	if err != nil {
		return err
	}
	var failed error
	moved, already := 0, 0
	for _, ps := range res {
		for _, r := range ps {
			switch {
			case r.Err == nil:
				moved++
				fmt.Printf("%s-%d: leader elected\n", r.Topic, r.Partition)
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				already++
			default:
				failed = errors.Join(failed, fmt.Errorf("%s-%d: %v: %s", r.Topic, r.Partition, r.Err, r.ErrMessage))
			}
		}
	}
	fmt.Printf("%d leaders moved, %d already led by their preferred replica\n", moved, already)
	return failed
}

func reassign(ctx context.Context, cl *kgo.Client, adm *kadm.Client, f replicaFlags) error {
	actions := 0
	for _, set := range []bool{*f.replicas != "", *f.cancel, *f.verify} {
		if set {
			actions++
		}
	}
	if *f.topic == "" || *f.partition < 0 || actions != 1 {
		return errors.New("reassign needs --topic, --partition and one of --replicas 1,2,3, --cancel or --verify")
	}
	if *f.throttle < 0 || *f.throttle > 0 && *f.replicas == "" {
		return errors.New("--throttle takes a rate in bytes a second, with --replicas")
	}
	if *f.verify {
		return verifyMove(ctx, cl, adm, *f.topic, int32(*f.partition))
	}
	var req kadm.AlterPartitionAssignmentsReq
	var target []int32
	if *f.cancel {
		req.CancelAssign(*f.topic, int32(*f.partition))
	} else {
		for _, s := range splitList(*f.replicas) {
			id, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return fmt.Errorf("--replicas %q: %q is not a broker id", *f.replicas, s)
			}
			target = append(target, int32(id))
		}
		req.Assign(*f.topic, int32(*f.partition), target)
	}
	if *f.throttle > 0 {
		// Before the move, so that the copying starts throttled.
		if err := throttleMove(ctx, adm, *f.topic, int32(*f.partition), target, *f.throttle); err != nil {
			return err
		}
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("%s-%d: %v: %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
		switch {
		case *f.cancel:
			fmt.Printf("%s-%d: reassignment cancelled\n", r.Topic, r.Partition)
		case *f.throttle > 0:
			fmt.Printf("%s-%d: moving to replicas %s, copying at most %d bytes a second; `topics reassign --verify --topic %s --partition %d` lifts the throttle once the move is done\n",
				r.Topic, r.Partition, *f.replicas, *f.throttle, r.Topic, r.Partition)
		default:
			fmt.Printf("%s-%d: moving to replicas %s (topics reassignments shows the progress)\n", r.Topic, r.Partition, *f.replicas)
		}
	}
	return nil
}

func listReassignments(ctx context.Context, cl *kgo.Client) error {
	moving, topics, err := reassignmentsUnderWay(ctx, cl)
	if err != nil {
		return err
	}
	for i, r := range moving {
		fmt.Printf("%s-%d: replicas %v, adding %v, removing %v\n", topics[i], r.Partition, r.Replicas, r.AddingReplicas, r.RemovingReplicas)
	}
	if len(moving) == 0 {
		fmt.Println("no reassignment in progress")
	}
	return nil
}
