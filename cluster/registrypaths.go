package cluster

import "net/url"

// Paths of the registries that broker packages keep (offsets in
// broker/group, SCRAM credentials in broker/auth), built here with the rest
// of the layout (zkpaths.go) so that every ZooKeeper path is spelled in
// cluster/ and nowhere else.

// Consumers is the parent of every group's node, the paper's consumer,
// ownership and offset registries.
func (p ZKPaths) Consumers() string { return p.Root + "/consumers" }

// GroupOffsets is the parent of a group's offset registry, one child per
// topic (Offsets).
func (p ZKPaths) GroupOffsets(group string) string { return p.Group(group) + "/offsets" }

// User is a user's SCRAM credential node. The name is path-escaped, so any
// user name (an e-mail address, a name with '/') is one node; UserName
// reverses it.
func (p ZKPaths) User(name string) string { return p.Users() + "/" + url.PathEscape(name) }

// UserName is the user name a child of Users stands for, or an error when
// the node is not one User wrote.
func UserName(node string) (string, error) { return url.PathUnescape(node) }
