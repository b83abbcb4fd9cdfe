package broker

import "github.com/tributary-io/tributary/broker/auth"

// The credential API that cmd/ and tests use, kept where they know it;
// broker/auth holds it.

// DefaultSCRAMIterations is the PBKDF2 iteration count of new credentials.
const DefaultSCRAMIterations = auth.DefaultSCRAMIterations

type (
	// CredentialStore keeps the SCRAM credentials of users.
	CredentialStore = auth.CredentialStore
	// CredentialFile is a standalone broker's credential store.
	CredentialFile = auth.CredentialFile
	// ZooKeeperCredentials is a cluster's credential store.
	ZooKeeperCredentials = auth.ZooKeeperCredentials
	// UserCredentials are the mechanisms a user has credentials for.
	UserCredentials = auth.UserCredentials
	// MechanismIterations describes one credential without its secrets.
	MechanismIterations = auth.MechanismIterations
)

var (
	// OpenCredentialFile returns the credential file at path.
	OpenCredentialFile = auth.OpenCredentialFile
	// CredentialFilePath is where a standalone broker keeps credentials.
	CredentialFilePath = auth.CredentialFilePath
	// NewSCRAMCredential derives a user's stored SCRAM keys.
	NewSCRAMCredential = auth.NewSCRAMCredential
	// NewZooKeeperCredentials is the credential store of a cluster.
	NewZooKeeperCredentials = auth.NewZooKeeperCredentials
)
