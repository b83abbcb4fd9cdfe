package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With Config.SyncACLs, who may read a topic follows it to the analysis
// datacenter: every Config.ACLSyncInterval the mirror reads the source's
// ACLs on the topics it selects and creates in the target those the target
// lacks, on the target topic's name (after --rename). The copies are
// read-only, in the spirit of MirrorMaker 2's topic ACL sync, which drops
// Write grants and turns All into Read so that only the mirror writes the
// copies; Tributary is stricter, since a Delete or Alter grant would let a
// source principal destroy or reconfigure the copy:
//
//   - only LITERAL topic ACLs are copied: a prefixed or wildcard ("*") one
//     also covers the target's own topics, which are not the source's to
//     open;
//   - ALLOW Read, Describe and DescribeConfigs are copied as they are,
//     ALLOW All becomes ALLOW Read, every other ALLOW is dropped;
//   - DENY entries are copied as they are (a deny only takes away), except
//     those for every principal (User:*), which would also stop the mirror
//     from reading the target's tails to resume.
//
// The mirror only ever creates ACLs, as MirrorMaker 2 does: it cannot tell
// an ACL it copied from one the target's administrators made, so a grant
// withdrawn in the source must be withdrawn in the target too.

// aclEntry is one topic ACL as the mirror compares them.
type aclEntry struct {
	topic, principal, host string
	op                     kmsg.ACLOperation
	perm                   kmsg.ACLPermissionType
}

// targetACL is what the source's ACL becomes in the target, or false if it
// is not copied.
func (c *compiled) targetACL(source string, a aclEntry) (aclEntry, bool) {
	if a.topic == "*" || strings.HasPrefix(a.topic, "__") || !c.selects(a.topic) {
		return aclEntry{}, false
	}
	a.topic = c.targetTopic(source, a.topic)
	switch a.perm {
	case kmsg.ACLPermissionTypeAllow:
		switch a.op {
		case kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs:
		case kmsg.ACLOperationAll:
			a.op = kmsg.ACLOperationRead
		default:
			return aclEntry{}, false
		}
	case kmsg.ACLPermissionTypeDeny:
		if a.principal == "User:*" {
			return aclEntry{}, false
		}
	default:
		return aclEntry{}, false
	}
	return a, true
}

// literalTopicACLs lists a cluster's LITERAL topic ACLs.
func literalTopicACLs(ctx context.Context, cl *kgo.Client) ([]aclEntry, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeTopic
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if resp.ErrorMessage != nil {
			return nil, fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
		}
		return nil, err
	}
	var out []aclEntry
	for _, r := range resp.Resources {
		if r.ResourceType != kmsg.ACLResourceTypeTopic || r.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral {
			continue
		}
		for _, a := range r.ACLs {
			out = append(out, aclEntry{topic: r.ResourceName, principal: a.Principal, host: a.Host, op: a.Operation, perm: a.PermissionType})
		}
	}
	return out, nil
}

// syncACLs copies the source's topic ACLs that the target lacks.
func (s *source) syncACLs(ctx context.Context) {
	if !s.cfg.SyncACLs {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	side, err := s.copyACLs(ctx)
	if err != nil && ctx.Err() == nil {
		s.events.failures.WithLabelValues(side).Inc()
		s.log.Warn("copying the source's topic ACLs to the target; will retry", "err", err)
	}
}

// copyACLs does syncACLs' work; on failure it also says which side failed.
func (s *source) copyACLs(ctx context.Context) (side string, err error) {
	have, err := literalTopicACLs(ctx, s.client)
	if err != nil {
		return "source", fmt.Errorf("reading the source's ACLs%s: %w", needs(err, "source", "Describe"), err)
	}
	want := map[aclEntry]bool{}
	for _, a := range have {
		if t, ok := s.cfg.targetACL(s.Name, a); ok {
			want[t] = true
		}
	}
	if len(want) == 0 {
		return "", nil
	}
	existing, err := literalTopicACLs(ctx, s.tgt.client)
	if err != nil {
		return "target", fmt.Errorf("reading the target's ACLs%s: %w", needs(err, "target", "Describe"), err)
	}
	for _, a := range existing {
		delete(want, a)
	}
	if len(want) == 0 {
		return "", nil
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for a := range want {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, a.topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = a.principal, a.host, a.op, a.perm
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, s.tgt.client)
	if err != nil {
		return "target", fmt.Errorf("creating %d ACLs in the target: %w", len(req.Creations), err)
	}
	created := 0
	for i, r := range resp.Results {
		if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
			c := req.Creations[i]
			if r.ErrorMessage != nil {
				e = fmt.Errorf("%w: %s", e, *r.ErrorMessage)
			}
			err = fmt.Errorf("creating %v %v for %s on topic %s in the target%s: %w",
				c.PermissionType, c.Operation, c.Principal, c.ResourceName, needs(e, "target", "Alter"), e)
			continue
		}
		created++
	}
	if created > 0 {
		s.log.Info("copied the source's topic ACLs to the target", "created", created)
	}
	if err != nil {
		return "target", err
	}
	return "", nil
}

// needs says what permission a refused ACL request lacked.
func needs(err error, side, op string) string {
	if errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return fmt.Sprintf(" (the mirror's %s principal needs %s on the cluster)", side, op)
	}
	return ""
}
