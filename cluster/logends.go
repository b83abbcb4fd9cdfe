package cluster

// Recovery when every in-sync replica restarted. A broker that restarted
// may have lost the tail of its log (a disk that lost its last writes),
// acknowledged records included, and each restarted member may have lost a
// different amount. So when no in-sync replica of a partition is alive in
// the incarnation the ISR records, and no eligible one is (elr.go), the
// controller does not hand the partition to the first restarted member:
//
//   - it takes the partition offline in a new leader epoch, the ISR kept;
//   - each broker that finds itself in the ISR of an offline partition
//     reports the end of its log there, for that leader epoch (an
//     ephemeral node .../partitions/<p>/log_ends/<id>, broker/replication/logends.go);
//   - once every ISR member that is a replica has reported in its current
//     incarnation, or recoveryWait after the partition went offline with
//     at least one report, the controller elects the reporter with the
//     longest log (the first in assignment order on a tie), alone in the
//     ISR, in the next leader epoch, and logs the ends it compared.
//
// recoveryWait bounds how long one ISR member that does not come back
// keeps the partition offline; its records above the chosen log's end
// are lost if it returns later.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// recoveryWait is how long the controller waits for every in-sync replica
// of an offline partition to report its log end before it elects the
// longest log reported.
const recoveryWait = 30 * time.Second

// LogEndReport is the content of .../partitions/<p>/log_ends/<id>.
type LogEndReport struct {
	BrokerEpoch int64 `json:"broker_epoch"`
	LeaderEpoch int32 `json:"leader_epoch"`
	LogEnd      int64 `json:"log_end"`
}

// PartitionLogEnds is the directory of the log-end reports of topic's
// partition.
func (p ZKPaths) PartitionLogEnds(topic string, partition int32) string {
	return p.Topic(topic) + "/partitions/" + strconv.Itoa(int(partition)) + "/log_ends"
}

// DecodeLogEndReport reads a log-end report, refusing what no broker
// writes.
func DecodeLogEndReport(data []byte) (LogEndReport, error) {
	var r LogEndReport
	if err := decodeNode("log end report", data, &r); err != nil {
		return LogEndReport{}, err
	}
	if r.BrokerEpoch <= 0 || r.LeaderEpoch < 0 || r.LogEnd < 0 {
		return LogEndReport{}, fmt.Errorf("log end report: broker epoch %d, leader epoch %d, log end %d: not a report a broker writes", r.BrokerEpoch, r.LeaderEpoch, r.LogEnd)
	}
	return r, nil
}

// ReportLogEnd tells the controller, for an offline partition whose ISR
// lists this broker, where its log ends, in the partition's current
// leader epoch.
func (z *ZooKeeper) ReportLogEnd(topic string, partition, leaderEpoch int32, end int64) error {
	dir := z.s.Paths.PartitionLogEnds(topic, partition)
	if err := z.s.EnsurePath(dir); err != nil {
		return fmt.Errorf("reporting the log end of %s-%d: %w", topic, partition, err)
	}
	data, _ := json.Marshal(LogEndReport{BrokerEpoch: z.BrokerEpoch(), LeaderEpoch: leaderEpoch, LogEnd: end})
	path := dir + "/" + strconv.Itoa(int(z.self.ID))
	_, err := z.s.Conn.Create(path, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = z.s.Conn.Set(path, data, -1)
	}
	if err != nil {
		return fmt.Errorf("reporting the log end of %s-%d: %w", topic, partition, err)
	}
	return nil
}

// readLogEnds reads the reports of a partition's brokers and keeps a watch
// on them, so that the next report runs a controller round.
func (c *controller) readLogEnds(topic string, p int32) (map[int32]LogEndReport, error) {
	dir := c.z.s.Paths.PartitionLogEnds(topic, p)
	if err := c.z.s.EnsurePath(dir); err != nil {
		return nil, err
	}
	kids, err := c.watch.Children(dir)
	if err != nil {
		return nil, err
	}
	reports := map[int32]LogEndReport{}
	for _, k := range kids {
		id, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		data, _, err := c.z.s.Conn.Get(dir + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r, err := DecodeLogEndReport(data)
		if err != nil {
			c.z.log.Warn("controller: ignoring an unreadable log end report", "path", dir+"/"+k, "err", err)
			continue
		}
		reports[int32(id)] = r
	}
	return reports, nil
}

// longestLog picks, among the reports valid for the offline state st (its
// leader epoch, from an ISR member that is a replica, alive in the broker
// epoch it reported in), the longest log, the first in assignment order on
// a tie. complete says whether every ISR member that is a replica
// reported.
func longestLog(st PartitionState, replicas []int32, live liveBrokers, reports map[int32]LogEndReport) (id int32, ok, complete bool) {
	valid := func(m int32) (LogEndReport, bool) {
		r, found := reports[m]
		e, alive := live[m]
		return r, found && alive && r.BrokerEpoch == e && r.LeaderEpoch == st.LeaderEpoch &&
			slices.Contains(st.ISR, m) && slices.Contains(replicas, m)
	}
	complete = true
	best := int64(-1)
	for _, m := range replicas {
		if !slices.Contains(st.ISR, m) {
			continue
		}
		r, found := valid(m)
		if !found {
			complete = false
			continue
		}
		if r.LogEnd > best {
			id, best, ok = m, r.LogEnd, true
		}
	}
	return id, ok, complete
}

// recoverLongest is the election of a partition none of whose in-sync
// replicas is alive in its recorded incarnation, nor an eligible one: first
// offline in a new leader epoch, then the longest log reported, alone in
// the ISR (the file comment). It returns the state to write, whether it
// changed, and the reports it compared.
func (c *controller) recoverLongest(topic string, p int32, st PartitionState, replicas []int32, live liveBrokers) (PartitionState, bool, map[int32]LogEndReport, error) {
	kept := st.withoutRestartedELR(live)
	tp := TopicPartition{topic, p}
	if st.Leader >= 0 {
		off := kept
		off.Leader, off.LeaderBrokerEpoch = -1, 0
		off.LeaderEpoch++
		c.recovering[tp] = time.Now()
		return off, true, nil, nil
	}
	reports, err := c.readLogEnds(topic, p)
	if err != nil {
		return st, false, nil, err
	}
	id, ok, complete := longestLog(st, replicas, live, reports)
	since, waiting := c.recovering[tp]
	if !waiting {
		since = time.Now()
		c.recovering[tp] = since
	}
	if !ok || (!complete && time.Since(since) < recoveryWait) {
		return kept, !sameState(kept, st), nil, nil
	}
	delete(c.recovering, tp)
	lone := kept.withISR([]int32{id}, func(int32) int64 { return live[id] })
	return lone.lead(id, live[id]), true, reports, nil
}
