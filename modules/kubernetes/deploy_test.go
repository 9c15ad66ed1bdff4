package kubelease_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// deployRole is the Role of deploy/rbac.yaml (the README's), which
// TestRBAC grants.
func deployRole(t testing.TB) rbacv1.Role {
	t.Helper()
	raw, err := os.ReadFile("deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(raw), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("deploy/rbac.yaml has %d documents, want a Role and a RoleBinding", len(docs))
	}
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &role); err != nil || role.Kind != "Role" {
		t.Fatalf("deploy/rbac.yaml's Role: %v (%s)", err, role.Kind)
	}
	var rb rbacv1.RoleBinding
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &rb); err != nil || rb.Kind != "RoleBinding" || rb.RoleRef.Name != role.Name {
		t.Fatalf("deploy/rbac.yaml's RoleBinding: %v (%+v)", err, rb.RoleRef)
	}
	return role
}

// TestDeployManifests: the README's manifests decode strictly as the
// objects they claim to be; the Role grants exactly get, create, update
// and watch on leases, and the Deployment takes its identity from the
// pod's name and probes /readyz.
func TestDeployManifests(t *testing.T) {
	role := deployRole(t)
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Verbs, []string{"get", "create", "update", "watch"}) ||
		!slices.Equal(role.Rules[0].Resources, []string{"leases"}) || !slices.Equal(role.Rules[0].APIGroups, []string{"coordination.k8s.io"}) {
		t.Errorf("the Role grants %+v", role.Rules)
	}
	raw, err := os.ReadFile("deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(raw, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Env) != 1 || c.Env[0].Name != "POD_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("identity env %+v", c.Env)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
	if d.Spec.Template.Spec.ServiceAccountName != "billing" {
		t.Errorf("service account %q", d.Spec.Template.Spec.ServiceAccountName)
	}
}
