package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HostIP returns an IPv4 address of this machine that an EndpointSlice may
// hold: not loopback, link-local or unspecified (the API server rejects
// those). Most machines have one (a LAN, Wi-Fi or container interface).
func HostIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list this machine's addresses: %w", err)
	}
	for _, a := range addrs {
		ipNet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := ipNet.IP.To4()
		if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
			continue
		}
		return ip, nil
	}
	return nil, errors.New("this machine has no IPv4 address besides loopback and link-local ones; the API server cannot reach a local process through a Service")
}

// RouteServiceToHost makes the API server's calls to the Service
// namespace/name (webhooks, CRD conversion, aggregated APIs) reach port on
// this machine: it writes an EndpointSlice for the Service's port portName
// with the address HostIP. The API server sends the Service's DNS name
// (name.namespace.svc) as the TLS server name, so the serving certificate a
// controller makes for its Service verifies unchanged.
//
// The slice is labelled as managed by odh-serving-localcluster; with no
// kube-controller-manager nothing else touches it.
func RouteServiceToHost(ctx context.Context, c client.Client, namespace, name, portName string, port int32) error {
	ip, err := HostIP()
	if err != nil {
		return err
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil {
		return fmt.Errorf("route Service %s/%s to this machine: %w", namespace, name, err)
	}
	found := false
	for _, p := range svc.Spec.Ports {
		found = found || p.Name == portName
	}
	if !found {
		return fmt.Errorf("route Service %s/%s to this machine: it has no port named %q", namespace, name, portName)
	}
	slice := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name + "-localhost",
			Namespace: namespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: name,
				discoveryv1.LabelManagedBy:   "odh-serving-localcluster",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ip.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := c.Patch(ctx, slice, client.Apply, client.FieldOwner("odh-serving-localcluster"), client.ForceOwnership); err != nil {
		return fmt.Errorf("route Service %s/%s to %s:%d: %w", namespace, name, ip, port, err)
	}
	return nil
}
