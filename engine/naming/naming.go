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
	if len(parent)+len(suffix) <= MaxLength {
		return parent + suffix, nil
	}
	const hashLen = 32
	keep := MaxLength - hashLen - len(suffix)
	if keep < 0 {
		return "", fmt.Errorf("name suffix %q is too long: at most %d characters", suffix, MaxLength-hashLen)
	}
	sum := md5.Sum([]byte(parent)) //nolint:gosec // see import
	return parent[:keep] + hex.EncodeToString(sum[:]) + suffix, nil
}

// SafeChildName returns parent+suffix when it fits in WorkloadBudget, and
// otherwise a truncated parent, 8 hex characters of the parent's SHA-256 and
// the suffix, exactly WorkloadBudget characters long. Suffixes longer than
// 35 characters are an error.
func SafeChildName(parent, suffix string) (string, error) {
	if len(parent)+len(suffix) <= WorkloadBudget {
		return parent + suffix, nil
	}
	const hashLen = 8
	keep := WorkloadBudget - hashLen - len(suffix)
	if keep < 0 {
		return "", fmt.Errorf("workload name suffix %q is too long: at most %d characters", suffix, WorkloadBudget-hashLen)
	}
	sum := sha256.Sum256([]byte(parent))
	return parent[:keep] + hex.EncodeToString(sum[:])[:hashLen] + suffix, nil
}
