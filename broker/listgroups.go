package broker

// ListGroups.
//
// Lists the groups this broker coordinates, with members or with only
// committed offsets (state Empty); in a cluster, ask every broker, as Kafka's
// tools do. v4 filters by state, v5 by type: every group here is "classic".

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(16, 0, 5, async((*Broker).listGroups))
}

func (b *Broker) listGroups(r *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	if len(r.TypesFilter) > 0 && !containsFold(r.TypesFilter, "classic") {
		return resp
	}
	groups, err := b.groups.List()
	resp.ErrorCode = codeOf(err)
	for _, g := range groups {
		if len(r.StatesFilter) > 0 && !containsFold(r.StatesFilter, g.State.String()) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Name, g.ProtocolType, g.State.String(), "classic"
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
