package testenv

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
)

// Shared is a control plane, and test/kwokcluster's cluster on it, that the
// tests of one package share: the first test that needs the control plane
// (ControlPlane) or the cluster (Cluster) starts it, and the package's
// TestMain stops both after the tests (MainShared). A package whose tests
// each started their own paid for a kube-apiserver, an etcd and the
// cluster's processes per test; shared, the tests keep apart by working
// in namespaces of their own.
//
//	var shared = testenv.Shared{Options: controlplane.Options{CRDs: []string{crds.GIE}}}
//
//	func TestMain(m *testing.M) { testenv.MainShared(m, &shared) }
type Shared struct {
	// Options are the control plane's (controlplane.StartWith).
	Options controlplane.Options

	cpOnce, clusterOnce sync.Once
	cp                  *controlplane.ControlPlane
	cluster             *kwokcluster.Cluster
	cpErr, clusterErr   error
}

// ControlPlane starts the control plane unless it runs, and fails the test
// if it could not start.
func (s *Shared) ControlPlane(tb testing.TB) *controlplane.ControlPlane {
	tb.Helper()
	s.cpOnce.Do(func() { s.cp, s.cpErr = controlplane.StartWith(s.Options) })
	if s.cpErr != nil {
		tb.Fatal(s.cpErr)
	}
	return s.cp
}

// Cluster starts the control plane and the cluster on it unless they run,
// and fails the test if they could not start.
func (s *Shared) Cluster(tb testing.TB) (*controlplane.ControlPlane, *kwokcluster.Cluster) {
	tb.Helper()
	cp := s.ControlPlane(tb)
	s.clusterOnce.Do(func() { s.cluster, s.clusterErr = kwokcluster.Start(cp.Config, kwokcluster.Options{}) })
	if s.clusterErr != nil {
		tb.Fatal(s.clusterErr)
	}
	return cp, s.cluster
}

// Stop stops the cluster, then the control plane, those that started.
func (s *Shared) Stop() error {
	var errs []error
	if s.cluster != nil {
		errs = append(errs, s.cluster.Stop())
		s.cluster = nil
	}
	if s.cp != nil {
		errs = append(errs, s.cp.Stop())
		s.cp = nil
	}
	return errors.Join(errs...)
}

// MainShared is the TestMain of a package whose tests share s: it runs the
// tests, stops what they started of s and exits with the tests' code (1
// when a stop failed).
func MainShared(m *testing.M, s *Shared) {
	code := m.Run()
	os.Exit(exitCode(code, s.Stop()))
}
