// Package certs tests package internal/certs against a real kube-apiserver
// and etcd (package controlplane): serving secrets written once and then
// never again, rotation, and the webhook CA bundle injected into the
// ValidatingWebhookConfiguration and the CRDs' conversion webhooks, checked
// by the API server itself calling a webhook server that presents the
// certificates.
package certs
