// Package auth proves who a client is: the SASL mechanisms the broker
// speaks (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), the SCRAM credentials they
// are checked against, and the defence against password guessing. It knows
// nothing of connections or requests; the broker's SASL handlers
// (broker/saslapi) drive one exchange per connection through it.
//
// What a caller may rely on:
//   - No password is stored: only the salted, iterated keys of RFC 5802
//     (credentials.go), in a file of the data directory (standalone) or
//     one ZooKeeper node per user (credentials_zk.go). A change applies
//     to the next login, on every broker.
//   - A login as a user that does not exist costs and answers as one with
//     a wrong password, so neither replies nor timing tell which users
//     exist; failed logins are limited per address and user (guard.go).
//   - A SCRAM exchange accepts a client only after checking its proof
//     (scram.go), whatever bytes the client sends.
package auth
