package broker

// DescribeLogDirs.
//
// A broker has one log directory, its data directory; the answer lists the
// size in bytes of each local partition asked for (all when the request
// names no topics) and, from v4, the file system's total and usable bytes.
// There are no replicas, so offset lag is 0 and nothing is "future".

import (
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/cluster"
)

func init() {
	register(35, 0, 4, async((*Broker).describeLogDirs))
}

func (b *Broker) describeLogDirs(req *kmsg.DescribeLogDirsRequest) *kmsg.DescribeLogDirsResponse {
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir, _ = filepath.Abs(b.cfg.DataDir)
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var st unix.Statfs_t
	if err := unix.Statfs(b.cfg.DataDir, &st); err == nil {
		dir.TotalBytes = int64(st.Blocks) * st.Bsize
		dir.UsableBytes = int64(st.Bavail) * st.Bsize
	}

	type wanted struct {
		t     cluster.Topic
		parts []int32
	}
	var ask []wanted
	if req.Topics == nil {
		for _, t := range b.meta.Topics() {
			ask = append(ask, wanted{t: t, parts: b.ownPartitions(t)})
		}
	} else {
		for _, rt := range req.Topics {
			if t, ok := b.meta.Topic(rt.Topic); ok {
				ask = append(ask, wanted{t: t, parts: rt.Partitions})
			}
		}
	}
	for _, w := range ask {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = w.t.Name
		for _, p := range w.parts {
			if p < 0 || p >= w.t.Partitions() || w.t.Leaders[p] != b.selfID {
				continue // not in this broker's directory
			}
			l, code := b.localPartition(w.t, p)
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

// ownPartitions lists the partitions of t this broker stores.
func (b *Broker) ownPartitions(t cluster.Topic) []int32 {
	var ps []int32
	for p, leader := range t.Leaders {
		if leader == b.selfID {
			ps = append(ps, int32(p))
		}
	}
	return ps
}
