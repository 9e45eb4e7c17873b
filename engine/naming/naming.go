package naming

import (
	"crypto/md5" //nolint:gosec // a name hash compatible with knative's ChildName, not a security use
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// MaxLength is the longest DNS label and label value.
const MaxLength = 63

// WorkloadBudget is the longest name SafeChildName returns: MaxLength less
// the 20 characters Kubernetes appends below a workload.
const WorkloadBudget = MaxLength - 20

// ChildName returns parent+suffix, or, when that is longer than 63
// characters, a 63-character name made of a truncated parent, the MD5 of the
// parent and the suffix. Suffixes longer than 31 characters are an error.
func ChildName(parent, suffix string) (string, error) {
	return shorten(parent, suffix, MaxLength, func() string {
		sum := md5.Sum([]byte(parent)) //nolint:gosec // see import
		return hex.EncodeToString(sum[:])
	})
}

// SafeChildName returns parent+suffix when it fits in WorkloadBudget, and
// otherwise a truncated parent, 8 hex characters of the parent's SHA-256 and
// the suffix, exactly WorkloadBudget characters long. Suffixes longer than
// 35 characters are an error.
func SafeChildName(parent, suffix string) (string, error) {
	return shorten(parent, suffix, WorkloadBudget, func() string {
		sum := sha256.Sum256([]byte(parent))
		return hex.EncodeToString(sum[:])[:8]
	})
}

// shorten returns parent+suffix if it fits in limit, and otherwise as much
// of parent as leaves room for the hash and the suffix. The hash is only
// computed when needed.
func shorten(parent, suffix string, limit int, hash func() string) (string, error) {
	if len(parent)+len(suffix) <= limit {
		return parent + suffix, nil
	}
	h := hash()
	keep := limit - len(h) - len(suffix)
	if keep < 0 {
		return "", fmt.Errorf("name suffix %q is too long: at most %d characters", suffix, limit-len(h))
	}
	return parent[:keep] + h + suffix, nil
}

// ClusterHashLength is how many hex characters of the SHA-256 of
// namespace/name a ClusterChildName carries: 64 bits.
const ClusterHashLength = 16

// ClusterChildName names a cluster-scoped child (a ClusterRoleBinding) of
// the object name in namespace: namespace-name, cut to fit, a dash, the
// first ClusterHashLength hex characters of the SHA-256 of namespace/name,
// and the suffix; at most 63 characters. Suffixes longer than 45
// characters are an error.
//
// A cluster-scoped name must tell apart objects of every namespace. Joining
// the two names with a character both may hold collides: a/b-c and a-b/c
// both read a-b-c, so one tenant could take or block another's binding. "/"
// is in no namespace and no name, so namespace/name differs for every
// object, and its hash tells them apart; the readable prefix is only for
// people. 64 bits put a second namespace and name with the same hash out of
// reach: finding one for a given binding takes about 2^64 hashes, even when
// a long prefix is cut and a tenant may vary the rest of its names.
func ClusterChildName(namespace, name, suffix string) (string, error) {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	hash := hex.EncodeToString(sum[:])[:ClusterHashLength]
	keep := MaxLength - len(suffix) - len(hash) - 1
	if keep < 1 {
		return "", fmt.Errorf("name suffix %q is too long: at most %d characters", suffix, MaxLength-len(hash)-2)
	}
	prefix := namespace + "-" + name
	if len(prefix) > keep {
		prefix = prefix[:keep]
	}
	return prefix + "-" + hash + suffix, nil
}
