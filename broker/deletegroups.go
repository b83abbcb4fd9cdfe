package broker

// DeleteGroups.
//
// Deletes groups without members, with their committed offsets:
// NON_EMPTY_GROUP while a group has members (in a cluster, also while the
// paper's ZooKeeper consumers are registered under its name),
// GROUP_ID_NOT_FOUND when there is nothing to delete. v3 (error messages) is
// not served.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(42, 0, 2, now((*Broker).deleteGroups))
}

func (b *Broker) deleteGroups(req *request, r *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	groups, refused := filterAuthorized(r.Groups, func(g string) bool {
		return b.mayGroup(req, kmsg.ACLOperationDelete, g)
	}, func(g string) kmsg.DeleteGroupsResponseGroup {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, groupRefused
		return rg
	})
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, name := range groups {
		sg := kmsg.NewDeleteGroupsResponseGroup()
		sg.Group = name
		sg.ErrorCode = codeOf(b.groups.Delete(name))
		resp.Groups = append(resp.Groups, sg)
	}
	resp.Groups = append(resp.Groups, refused...)
	return resp
}
