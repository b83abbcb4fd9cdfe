package securityapi

// DescribeUserScramCredentials (key 50), version 0: SCRAM users as
// kafka-configs and kadm list them.
//
// Names each user's mechanisms and iteration counts, never a key; the
// caller needs Describe on the cluster. No user named: every user. A user
// named twice gets DUPLICATE_RESOURCE for every mention, as in Kafka; an
// unknown one RESOURCE_NOT_FOUND.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(50, 0, 0, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.describeUserSCRAMCredentials) })
}

// Kafka's numbering of the SCRAM mechanisms.
var scramMechanismCodes = map[int8]string{1: auth.MechSCRAM256, 2: auth.MechSCRAM512}

func scramMechanismCode(name string) int8 {
	for code, n := range scramMechanismCodes {
		if n == name {
			return code
		}
	}
	return 0
}

func (h *Handlers) describeUserSCRAMCredentials(who *kafkaapi.Request, req *kmsg.DescribeUserSCRAMCredentialsRequest) *kmsg.DescribeUserSCRAMCredentialsResponse {
	if !h.authz.MayCluster(who.Who, kmsg.ACLOperationDescribe) {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.ErrorCode = acl.ClusterRefused
		return resp
	}
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	all, err := h.creds.List()
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		return resp
	}
	byName := map[string]auth.UserCredentials{}
	for _, u := range all {
		byName[u.User] = u
	}
	result := func(u auth.UserCredentials) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.User
		for _, m := range u.Mechanisms {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = scramMechanismCode(m.Mechanism), int32(m.Iterations)
			r.CredentialInfos = append(r.CredentialInfos, ci)
		}
		return r
	}
	if len(req.Users) == 0 {
		// Null or empty: every user, as Kafka answers; Java's
		// describeUserScramCredentials() sends an empty list
		// (kafka-configs --describe --entity-type users).
		for _, u := range all {
			resp.Results = append(resp.Results, result(u))
		}
		return resp
	}
	seen := map[string]int{}
	for _, u := range req.Users {
		seen[u.Name]++
	}
	for _, ru := range req.Users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = ru.Name
		u, ok := byName[ru.Name]
		switch {
		case seen[ru.Name] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
		case !ok:
			r.ErrorCode = kerr.ResourceNotFound.Code
			msg := fmt.Sprintf("attempt to describe a user credential that does not exist: %s", ru.Name)
			r.ErrorMessage = &msg
		default:
			r = result(u)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
