package main

// topics elect-leaders, reassign and reassignments: the replicated
// partitions' leaders and placement, through ElectLeaders,
// AlterPartitionReassignments and ListPartitionReassignments.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// replicaFlags are the flags of elect-leaders and reassign.
type replicaFlags struct {
	topic     *string
	partition *int
	replicas  *string
	unclean   *bool
	cancel    *bool
}

func (f *replicaFlags) register(fs *flag.FlagSet) {
	f.topic = fs.String("topic", "", "topic of elect-leaders (default: every replicated topic) or reassign")
	f.partition = fs.Int("partition", -1, "partition to reassign")
	f.replicas = fs.String("replicas", "", "reassign: the partition's new replicas, comma-separated broker ids, preferred leader first")
	f.unclean = fs.Bool("unclean", false, "elect-leaders: let a live replica outside the ISR lead a leaderless partition (whatever unclean.leader.election.enable says, this once; may lose acknowledged records)")
	f.cancel = fs.Bool("cancel", false, "reassign: cancel the partition's reassignment")
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

func reassign(ctx context.Context, adm *kadm.Client, f replicaFlags) error {
	if *f.topic == "" || *f.partition < 0 || (*f.replicas == "") == !*f.cancel {
		return errors.New("reassign needs --topic, --partition and either --replicas 1,2,3 or --cancel")
	}
	var req kadm.AlterPartitionAssignmentsReq
	if *f.cancel {
		req.CancelAssign(*f.topic, int32(*f.partition))
	} else {
		var ids []int32
		for _, s := range splitList(*f.replicas) {
			id, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return fmt.Errorf("--replicas %q: %q is not a broker id", *f.replicas, s)
			}
			ids = append(ids, int32(id))
		}
		req.Assign(*f.topic, int32(*f.partition), ids)
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("%s-%d: %v: %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
		if *f.cancel {
			fmt.Printf("%s-%d: reassignment cancelled\n", r.Topic, r.Partition)
		} else {
			fmt.Printf("%s-%d: moving to replicas %s (topics reassignments shows the progress)\n", r.Topic, r.Partition, *f.replicas)
		}
	}
	return nil
}

func listReassignments(ctx context.Context, adm *kadm.Client) error {
	res, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil {
		return err
	}
	for _, r := range res.Sorted() {
		fmt.Printf("%s-%d: replicas %v, adding %v, removing %v\n", r.Topic, r.Partition, r.Replicas, r.AddingReplicas, r.RemovingReplicas)
	}
	if len(res) == 0 {
		fmt.Println("no reassignment in progress")
	}
	return nil
}
