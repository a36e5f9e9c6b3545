// Package validate checks the deployment manifests in deploy/ by decoding
// each one strictly (unknown fields are errors) into the Kubernetes and
// Prometheus Operator API types. It is its own module, so the gateway's
// binary and dependencies do not grow: `make test` runs it.
package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// object is what every manifest document starts with.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func TestManifests(t *testing.T) {
	files, _ := filepath.Glob("../*/*.yaml")
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	kinds := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(b), "\n---\n") {
			var o object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o.Kind == "" {
				t.Errorf("%s, document %d: no kind (%v)", f, i+1, err)
				continue
			}
			var into any
			switch o.APIVersion + " " + o.Kind {
			case "apps/v1 Deployment":
				into = &appsv1.Deployment{}
			case "v1 Service":
				into = &corev1.Service{}
			case "v1 ConfigMap":
				into = &corev1.ConfigMap{}
			case "monitoring.coreos.com/v1 ServiceMonitor":
				into = &monitoringv1.ServiceMonitor{}
			default:
				t.Errorf("%s, document %d: unexpected %s %s", f, i+1, o.APIVersion, o.Kind)
				continue
			}
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Errorf("%s, document %d (%s): %v", f, i+1, o.Kind, err)
				continue
			}
			kinds[o.Kind]++
			if d, ok := into.(*appsv1.Deployment); ok {
				checkDeployment(t, f, d)
			}
		}
	}
	for _, k := range []string{"Deployment", "Service", "ConfigMap", "ServiceMonitor"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the manifests", k)
		}
	}
}

// checkDeployment: the toolgate container is probed on the admin port,
// has resources, and runs read-only, non-root, without privilege
// escalation.
func checkDeployment(t *testing.T, file string, d *appsv1.Deployment) {
	found := false
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "toolgate" {
			continue
		}
		found = true
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: the toolgate container's security context is not read-only, non-root, without privilege escalation", file)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
			c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("%s: toolgate must be probed on /readyz and /healthz", file)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: toolgate needs a CPU request and a memory limit", file)
		}
	}
	if !found {
		t.Errorf("%s: no toolgate container", file)
	}
}
