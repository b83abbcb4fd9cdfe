package groupapi

// DeleteGroups.
//
// Deletes groups without members, with their committed offsets:
// NON_EMPTY_GROUP while a group has members (in a cluster, also while the
// paper's ZooKeeper consumers are registered under its name),
// GROUP_ID_NOT_FOUND when there is nothing to delete. v3 (error messages) is
// not served.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(42, 0, 2, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.deleteGroups) })
}

func (h *Handlers) deleteGroups(req *kafkaapi.Request, r *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	groups, refused := acl.Filter(r.Groups, func(g string) bool {
		return h.authz.MayGroup(req.Who, kmsg.ACLOperationDelete, g)
	}, func(g string) kmsg.DeleteGroupsResponseGroup {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, acl.GroupRefused
		return rg
	})
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, name := range groups {
		sg := kmsg.NewDeleteGroupsResponseGroup()
		sg.Group = name
		sg.ErrorCode = codeOf(h.groups.Delete(name))
		resp.Groups = append(resp.Groups, sg)
	}
	resp.Groups = append(resp.Groups, refused...)
	return resp
}
