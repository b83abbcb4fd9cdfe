package topicapi

// DescribeLogDirs.
//
// A broker has one log directory, its data directory; the answer lists the
// size in bytes of each local partition asked for (all when the request
// names no topics), whether this broker leads it or follows, and, from v4,
// the file system's total and usable bytes. With one directory no replica
// moves between directories, so offset lag is 0 and nothing is "future".

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(35, 0, 4, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.describeLogDirs) })
}

func (h *Handlers) describeLogDirs(who *kafkaapi.Request, req *kmsg.DescribeLogDirsRequest) *kmsg.DescribeLogDirsResponse {
	if !h.authz.MayCluster(who.Who, kmsg.ACLOperationDescribe) {
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		resp.ErrorCode = acl.ClusterRefused
		return resp
	}
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir, _ = filepath.Abs(h.dataDir)
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var st unix.Statfs_t
	if err := unix.Statfs(h.dataDir, &st); err == nil {
		dir.TotalBytes = int64(st.Blocks) * st.Bsize
		dir.UsableBytes = int64(st.Bavail) * st.Bsize
	}

	type wanted struct {
		t     cluster.Topic
		parts []int32
	}
	var ask []wanted
	if req.Topics == nil {
		for _, t := range h.meta.Topics() {
			ask = append(ask, wanted{t: t, parts: h.ownPartitions(t)})
		}
	} else {
		for _, rt := range req.Topics {
			if t, ok := h.meta.Topic(rt.Topic); ok {
				ask = append(ask, wanted{t: t, parts: rt.Partitions})
			}
		}
	}
	for _, w := range ask {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = w.t.Name
		for _, p := range w.parts {
			if p < 0 || p >= w.t.Partitions() || !slices.Contains(w.t.ReplicasOf(p), h.self) {
				continue // not in this broker's directory
			}
			l, code := h.storedPartition(w.t, p)
			if code != 0 {
				if code == kerr.KafkaStorageError.Code {
					dir.ErrorCode = code
				}
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p, l.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}

// ownPartitions lists the partitions of t this broker stores, as leader
// or follower.
func (h *Handlers) ownPartitions(t cluster.Topic) []int32 {
	var ps []int32
	for p := range t.Partitions() {
		if slices.Contains(t.ReplicasOf(p), h.self) {
			ps = append(ps, p)
		}
	}
	return ps
}

// storedPartition returns the log of a partition this broker stores,
// leading it or not. A follower that has not written the partition yet (a
// replica just added) is skipped: describing it must not create it.
func (h *Handlers) storedPartition(t cluster.Topic, p int32) (*log.Log, int16) {
	if t.Leaders[p] == h.self {
		part, code := h.replicas.Lookup(t, p)
		return part.Log(), code
	}
	if _, err := os.Stat(h.logs.Dir(t.Name, p)); errors.Is(err, os.ErrNotExist) {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	l, err := h.logs.Get(t, p)
	switch {
	case errors.Is(err, partition.ErrTopicDeleted):
		return nil, kerr.UnknownTopicOrPartition.Code
	case err != nil:
		h.logger.Error("partition unavailable", "topic", t.Name, "partition", p, "err", err)
		return nil, kerr.KafkaStorageError.Code
	}
	return l, 0
}
