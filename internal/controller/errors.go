package controller

import (
	"errors"
	"fmt"
	"time"
)

// notControlledError says a child's name is taken by an object the service
// does not control. It is never applied over or deleted.
type notControlledError struct {
	kind, namespace, name string
}

func (e *notControlledError) Error() string {
	where := e.name
	if e.namespace != "" {
		where = e.namespace + "/" + e.name
	}
	return fmt.Sprintf("%s %s exists and is not controlled by this LLMInferenceService; rename or delete it", e.kind, where)
}

// notControlledRetry is how often a service whose child's name is taken
// looks again.
const notControlledRetry = 30 * time.Second

// onlyNotControlled reports whether every error joined in err says a
// child's name is taken.
func onlyNotControlled(err error) bool {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var nc *notControlledError
		if !errors.As(e, &nc) {
			return false
		}
	}
	return true
}
