package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func joinRequest(version int16, groupName, member string, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID = groupName, member
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	req.ProtocolType = "consumer"
	for _, p := range protocols {
		rp := kmsg.NewJoinGroupRequestProtocol()
		rp.Name, rp.Metadata = p, []byte{0, 1}
		req.Protocols = append(req.Protocols, rp)
	}
	return req
}

// TestGroupBadInput sends what a broken or confused client could, over the
// raw protocol at several versions, and checks Kafka's error code for each.
func TestGroupBadInput(t *testing.T) {
	b := startGroupBroker(t)
	createTopic(t, b.Addr, "known", 2, nil)
	w := dial(t, b.Addr)

	t.Run("JoinGroup without protocols", func(t *testing.T) {
		for _, v := range []int16{0, 5, 9} {
			resp := w.roundTrip(joinRequest(v, "bad", "")).(*kmsg.JoinGroupResponse)
			wantCode(t, "join without protocols", resp.ErrorCode, kerr.InconsistentGroupProtocol)
		}
	})
	t.Run("JoinGroup v4+ first asks for the member id", func(t *testing.T) {
		resp := w.roundTrip(joinRequest(9, "fresh", "", "range")).(*kmsg.JoinGroupResponse)
		wantCode(t, "first join", resp.ErrorCode, kerr.MemberIDRequired)
		if resp.MemberID == "" {
			t.Fatal("MEMBER_ID_REQUIRED without a member id")
		}
	})
	t.Run("JoinGroup with a session timeout below the minimum", func(t *testing.T) {
		req := joinRequest(7, "short", "", "range")
		req.SessionTimeoutMillis = 1
		wantCode(t, "join", w.roundTrip(req).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
	})

	// A real member, so that the group exists for the next cases.
	join := w.roundTrip(joinRequest(3, "live", "", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "join of a live member", join.ErrorCode, nil)
	if join.Protocol == nil || *join.Protocol != "range" || join.LeaderID != join.MemberID || len(join.Members) != 1 {
		t.Fatalf("join response: %+v", join)
	}

	t.Run("JoinGroup with no protocol in common", func(t *testing.T) {
		resp := w.roundTrip(joinRequest(3, "live", "", "roundrobin")).(*kmsg.JoinGroupResponse)
		wantCode(t, "join", resp.ErrorCode, kerr.InconsistentGroupProtocol)
	})
	t.Run("SyncGroup from a non-member", func(t *testing.T) {
		for _, v := range []int16{0, 3, 5} {
			req := kmsg.NewPtrSyncGroupRequest()
			req.SetVersion(v)
			req.Group, req.MemberID, req.Generation = "live", "stranger", join.Generation
			wantCode(t, "sync", w.roundTrip(req).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
		}
	})
	t.Run("SyncGroup of a stale generation", func(t *testing.T) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.SetVersion(4)
		req.Group, req.MemberID, req.Generation = "live", join.MemberID, join.Generation-1
		wantCode(t, "sync", w.roundTrip(req).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration)
	})
	t.Run("Heartbeat of an unknown member", func(t *testing.T) {
		req := kmsg.NewPtrHeartbeatRequest()
		req.SetVersion(4)
		req.Group, req.MemberID, req.Generation = "live", "stranger", join.Generation
		wantCode(t, "heartbeat", w.roundTrip(req).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	})
	t.Run("OffsetCommit for an unknown topic or partition", func(t *testing.T) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(8)
		req.Group, req.MemberID, req.Generation = "live", join.MemberID, join.Generation
		for _, c := range []struct {
			topic string
			part  int32
		}{{"no-such-topic", 0}, {"known", 7}} {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = c.topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = c.part, 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := w.roundTrip(req).(*kmsg.OffsetCommitResponse)
		for _, rt := range resp.Topics {
			wantCode(t, rt.Topic, rt.Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		}
	})
	t.Run("OffsetCommit from outside while the group has members", func(t *testing.T) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(2)
		req.Group, req.Generation = "live", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "known"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		wantCode(t, "commit", w.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	})
	t.Run("DeleteGroups", func(t *testing.T) {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.SetVersion(2)
		req.Groups = []string{"live", "never-existed"}
		resp := w.roundTrip(req).(*kmsg.DeleteGroupsResponse)
		wantCode(t, "group with members", resp.Groups[0].ErrorCode, kerr.NonEmptyGroup)
		wantCode(t, "unknown group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	})
	t.Run("DescribeGroups of an unknown group", func(t *testing.T) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(6)
		req.Groups = []string{"never-existed"}
		wantCode(t, "v6", w.roundTrip(req).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound)
		req.SetVersion(5)
		g := w.roundTrip(req).(*kmsg.DescribeGroupsResponse).Groups[0]
		if g.ErrorCode != 0 || g.State != "Dead" {
			t.Fatalf("v5: error %d, state %q; want Dead", g.ErrorCode, g.State)
		}
	})
	t.Run("FindCoordinator for a transactional id", func(t *testing.T) {
		// The standalone broker coordinates every transactional id, in
		// both request shapes (v4+ batched keys, below one key).
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(4)
		req.CoordinatorType = 1
		req.CoordinatorKeys = []string{"txn"}
		c := w.roundTrip(req).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		wantCode(t, "transactional id, v4", c.ErrorCode, nil)
		if c.NodeID < 0 || c.Port <= 0 {
			t.Fatalf("v4: coordinator %+v", c)
		}
		req = kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(2)
		req.CoordinatorType = 1
		req.CoordinatorKey = "txn"
		wantCode(t, "transactional id, v2", w.roundTrip(req).(*kmsg.FindCoordinatorResponse).ErrorCode, nil)
	})
}

// TestGroupOldVersions runs one member through every API at version 0, as
// the oldest clients (and librdkafka's feature probes) speak them.
func TestGroupOldVersions(t *testing.T) {
	b := startGroupBroker(t)
	createTopic(t, b.Addr, "old", 1, nil)
	w := dial(t, b.Addr)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g0"
	if r := w.roundTrip(fc).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 || r.Port == 0 {
		t.Fatalf("FindCoordinator v0: %+v", r)
	}
	join := w.roundTrip(joinRequest(0, "g0", "", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "JoinGroup v0", join.ErrorCode, nil)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g0", join.MemberID, join.Generation
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = join.MemberID, []byte("mine")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	sr := w.roundTrip(sync).(*kmsg.SyncGroupResponse)
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "mine" {
		t.Fatalf("SyncGroup v0: %+v", sr)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g0", join.MemberID, join.Generation
	wantCode(t, "Heartbeat v0", w.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, nil)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(1)
	commit.Group, commit.MemberID, commit.Generation = "g0", join.MemberID, join.Generation
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "old"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 42
	rt.Partitions = append(rt.Partitions, rp)
	commit.Topics = append(commit.Topics, rt)
	wantCode(t, "OffsetCommit v1", w.roundTrip(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g0"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "old", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	if p := w.roundTrip(fetch).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 42 {
		t.Fatalf("OffsetFetch v0: %+v", p)
	}

	list := w.roundTrip(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	if len(list.Groups) != 1 || list.Groups[0].Group != "g0" || list.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups v0: %+v", list.Groups)
	}
	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.Groups = []string{"g0"}
	if g := w.roundTrip(desc).(*kmsg.DescribeGroupsResponse).Groups[0]; g.State != "Stable" || len(g.Members) != 1 || string(g.Members[0].MemberAssignment) != "mine" {
		t.Fatalf("DescribeGroups v0: %+v", g)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g0", join.MemberID
	wantCode(t, "LeaveGroup v0", w.roundTrip(leave).(*kmsg.LeaveGroupResponse).ErrorCode, nil)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g0"}
	wantCode(t, "DeleteGroups v0", w.roundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
}

// TestJoinGroupEndsAtShutdown: a JoinGroup waiting for its rebalance does
// not hold the broker's shutdown; it is answered COORDINATOR_NOT_AVAILABLE,
// which sends the client to look for a coordinator again.
func TestJoinGroupEndsAtShutdown(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		fastGroups(c)
		c.Groups.InitialRebalanceDelay = time.Minute
	}))
	w := dial(t, b.Addr)
	stopped := make(chan time.Duration, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		b.Stop()
		stopped <- time.Since(start)
	}()
	resp := w.roundTrip(joinRequest(3, "slow", "", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "waiting join at shutdown", resp.ErrorCode, kerr.CoordinatorNotAvailable)
	if d := <-stopped; d > 5*time.Second {
		t.Fatalf("shutdown took %v with a JoinGroup waiting", d)
	}
}
