package groupapi

// ListGroups.
//
// Lists the groups this broker coordinates, with members or with only
// committed offsets (state Empty); in a cluster, ask every broker, as Kafka's
// tools do. v4 filters by state, v5 by type: "consumer" for a group of the
// consumer protocol with members (its state is then Assigning, Reconciling
// or Stable), "classic" for every other.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(16, 0, 5, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.listGroups) })
}

func (h *Handlers) listGroups(req *kafkaapi.Request, r *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := h.listAllGroups(r)
	if !h.authz.MayCluster(req.Who, kmsg.ACLOperationDescribe) {
		// Without Describe on the cluster, only the groups it may describe.
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			if h.authz.MayGroup(req.Who, kmsg.ACLOperationDescribe, g.Group) {
				kept = append(kept, g)
			}
		}
		resp.Groups = kept
	}
	return resp
}

func (h *Handlers) listAllGroups(r *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	groups, err := h.groups.List()
	resp.ErrorCode = codeOf(err)
	for _, g := range groups {
		state := g.State.String()
		if g.ConsumerState != "" {
			state = g.ConsumerState
		}
		if len(r.StatesFilter) > 0 && !containsFold(r.StatesFilter, state) ||
			len(r.TypesFilter) > 0 && !containsFold(r.TypesFilter, g.Type) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Name, g.ProtocolType, state, g.Type
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
