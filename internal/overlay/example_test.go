package overlay_test

import (
	"fmt"

	"github.com/opendatahub-io/odh-serving/internal/overlay"
)

func ExampleOverlay_Apply() {
	o, err := overlay.Load("openshift")
	if err != nil {
		panic(err)
	}
	out, err := o.Apply([]byte(`apiVersion: v1
kind: Service
metadata:
  name: odh-serving-webhook
  namespace: opendatahub
spec:
  ports:
  - port: 443
`))
	if err != nil {
		panic(err)
	}
	fmt.Print(string(out))
	// Output:
	// apiVersion: v1
	// kind: Service
	// metadata:
	//   annotations:
	//     service.beta.openshift.io/serving-cert-secret-name: odh-serving-webhook-cert
	//   name: odh-serving-webhook
	//   namespace: opendatahub
	// spec:
	//   ports:
	//   - port: 443
}
