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
