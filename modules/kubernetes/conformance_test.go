package kubelease_test

import (
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// putGarbage writes a Lease whose fxelection annotation cannot be decoded,
// as a foreign program might. Kubernetes cannot expire it
// (GarbageNeverExpires).
func putGarbage(ns string) func(*testing.T, string, time.Duration) {
	return func(t *testing.T, election string, _ time.Duration) {
		holder := "intruder"
		obj := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: kubelease.LeaseName(election), Namespace: ns,
				Annotations: map[string]string{kubelease.AnnotationRecord: `{"not": "a lease"`}},
			Spec: coordv1.LeaseSpec{HolderIdentity: &holder},
		}
		leases := newClient(t).CoordinationV1().Leases(ns)
		if _, err := leases.Create(ctxT(t), obj, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			cur, err := leases.Get(ctxT(t), obj.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			obj.ResourceVersion = cur.ResourceVersion
			if _, err := leases.Update(ctxT(t), obj, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

func deleteLease(ns string) func(*testing.T, string) {
	return func(t *testing.T, election string) {
		err := newClient(t).CoordinationV1().Leases(ns).Delete(ctxT(t), kubelease.LeaseName(election), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// TestConformance runs the core's conformance suite (contract and smoke)
// against a real kube-apiserver: with push wake-up (a watch on the
// namespace's Leases), and without; each with the StoreDown case on an API
// server of its own.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts kubelease.Options
	}{
		{"Default", kubelease.Options{}},
		{"Polling", kubelease.Options{DisablePush: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "default"
			electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
				return newBackend(t, tc.opts)
			}, electiontest.Options{
				TTL:                 time.Second,
				PutGarbage:          putGarbage(ns),
				GarbageNeverExpires: true,
				DeleteRecord:        deleteLease(ns),
				PushDisabled:        tc.opts.DisablePush,
				StoreDown:           storeDown, // an API server of its own, killed and restarted
			})
		})
	}
}
