package validate

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// rendered is one rendering of the chart, decoded strictly.
type rendered struct {
	deployment     *appsv1.Deployment
	services       []*corev1.Service
	configMaps     []*corev1.ConfigMap
	serviceMonitor *monitoringv1.ServiceMonitor
	serviceAccount *corev1.ServiceAccount
}

// render renders deploy/helm/toolgate with Helm's engine for the default
// values overridden by values (YAML), and decodes every document strictly
// into its Kubernetes type.
func render(t *testing.T, values string) (rendered, error) {
	t.Helper()
	ch, err := loader.Load("../helm/toolgate")
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Validate(); err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "gw", Namespace: "ai", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return rendered{}, err
	}
	var r rendered
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(content, "\n---\n") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var o object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o.Kind == "" {
				t.Fatalf("%s: no kind (%v):\n%s", name, err, doc)
			}
			var into any
			switch o.APIVersion + " " + o.Kind {
			case "apps/v1 Deployment":
				r.deployment = &appsv1.Deployment{}
				into = r.deployment
			case "v1 Service":
				r.services = append(r.services, &corev1.Service{})
				into = r.services[len(r.services)-1]
			case "v1 ConfigMap":
				r.configMaps = append(r.configMaps, &corev1.ConfigMap{})
				into = r.configMaps[len(r.configMaps)-1]
			case "v1 ServiceAccount":
				r.serviceAccount = &corev1.ServiceAccount{}
				into = r.serviceAccount
			case "monitoring.coreos.com/v1 ServiceMonitor":
				r.serviceMonitor = &monitoringv1.ServiceMonitor{}
				into = r.serviceMonitor
			default:
				t.Fatalf("%s: unexpected %s %s", name, o.APIVersion, o.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("%s (%s): %v\n%s", name, o.Kind, err, doc)
			}
		}
	}
	if r.deployment == nil {
		t.Fatal("no Deployment rendered")
	}
	checkDeployment(t, "chart", r.deployment)
	return r, nil
}

// service returns the rendered Service of that name, or nil.
func service(r rendered, name string) *corev1.Service {
	for _, s := range r.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func mustRender(t *testing.T, values string) rendered {
	t.Helper()
	r, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// volumeSource is the config volume of the rendered Deployment.
func volumeSource(t *testing.T, d *appsv1.Deployment) corev1.VolumeSource {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "toolgate-config" {
			return v.VolumeSource
		}
	}
	t.Fatal("no toolgate-config volume")
	return corev1.VolumeSource{}
}

// The default values: a shared service (Deployment, Service, the config
// rendered into a ConfigMap the Deployment mounts and rolls on), no
// ServiceMonitor, no dashboard.
func TestChartDefault(t *testing.T) {
	r := mustRender(t, "")
	d := r.deployment
	if *d.Spec.Replicas != 2 || d.Name != "gw-toolgate" || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("deployment: %s, %d replicas, %d containers", d.Name, *d.Spec.Replicas, len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "ghcr.io/toolgate/toolgate:0.2.0" || strings.Join(c.Args, " ") != "--config /etc/toolgate/toolgate.yaml" || len(c.Ports) != 2 {
		t.Errorf("container: %s %v %v", c.Image, c.Args, c.Ports)
	}
	// The Service carries the API alone: the admin port (/metrics lists
	// key names and spend) is not exposed unless asked.
	if len(r.services) != 1 || len(r.services[0].Spec.Ports) != 1 || r.services[0].Spec.Ports[0].Port != 8080 || r.serviceMonitor != nil || len(r.configMaps) != 1 {
		t.Errorf("services %d (%+v), configmaps %d, servicemonitor %v", len(r.services), r.services, len(r.configMaps), r.serviceMonitor != nil)
	}
	cfg := r.configMaps[0].Data["toolgate.yaml"]
	if vs := volumeSource(t, d); vs.ConfigMap == nil || vs.ConfigMap.Name != r.configMaps[0].Name || !strings.Contains(cfg, "api_key: ${OPENAI_API_KEY}") {
		t.Errorf("config: %+v\n%s", vs, cfg)
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no config checksum on the pod template")
	}
	if d.Spec.Template.Spec.SecurityContext == nil || d.Spec.Template.Spec.SecurityContext.SeccompProfile == nil {
		t.Error("no pod security context")
	}
}

// Each documented variant renders valid objects.
func TestChartVariants(t *testing.T) {
	t.Run("sidecar", func(t *testing.T) {
		r := mustRender(t, `
mode: sidecar
replicaCount: 3
sidecar:
  containers:
    - name: app
      image: registry.example.com/agent:1.0.0
      env: [{name: OPENAI_BASE_URL, value: "http://127.0.0.1:8080/v1"}]
  service: {enabled: true, ports: [{name: web, port: 80, targetPort: 3000}]}
serviceMonitor: {enabled: true}
`)
		cs := r.deployment.Spec.Template.Spec.Containers
		if len(cs) != 2 || cs[0].Name != "app" || cs[1].Name != "toolgate" || len(cs[1].Ports) != 1 || cs[1].Ports[0].Name != "admin" {
			t.Errorf("containers: %+v", cs)
		}
		app, metrics := service(r, "gw-toolgate"), service(r, "gw-toolgate-metrics")
		if len(r.services) != 2 || app == nil || len(app.Spec.Ports) != 1 || app.Spec.Ports[0].Name != "web" || r.serviceMonitor == nil {
			t.Errorf("the app's service: %+v", r.services)
		}
		if metrics == nil || metrics.Spec.ClusterIP != "None" || len(metrics.Spec.Ports) != 1 || metrics.Spec.Ports[0].Name != "admin" ||
			r.serviceMonitor.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "metrics" || metrics.Labels["app.kubernetes.io/component"] != "metrics" {
			t.Errorf("the metrics service %+v, selected by %+v", metrics, r.serviceMonitor.Spec.Selector)
		}
	})
	t.Run("service account for workload identity", func(t *testing.T) {
		r := mustRender(t, `{serviceAccount: {create: true, annotations: {iam.gke.io/gcp-service-account: gw@p.iam.gserviceaccount.com}}}`)
		sa := r.serviceAccount
		if sa == nil || sa.Name != "gw-toolgate" || sa.Annotations["iam.gke.io/gcp-service-account"] != "gw@p.iam.gserviceaccount.com" ||
			r.deployment.Spec.Template.Spec.ServiceAccountName != "gw-toolgate" {
			t.Errorf("service account %+v, the pods' %q", sa, r.deployment.Spec.Template.Spec.ServiceAccountName)
		}
		if r := mustRender(t, `{}`); r.serviceAccount != nil || r.deployment.Spec.Template.Spec.ServiceAccountName != "" {
			t.Errorf("a service account by default")
		}
	})
	t.Run("admin exposed", func(t *testing.T) {
		r := mustRender(t, `{service: {exposeAdmin: true}}`)
		if len(r.services) != 1 || len(r.services[0].Spec.Ports) != 2 || r.services[0].Spec.Ports[1].Name != "admin" {
			t.Errorf("services: %+v", r.services)
		}
	})
	t.Run("monitored sidecar without an app Service", func(t *testing.T) {
		r := mustRender(t, `{mode: sidecar, sidecar: {containers: [{name: app, image: x}]}, serviceMonitor: {enabled: true}}`)
		if len(r.services) != 1 || service(r, "gw-toolgate-metrics") == nil || r.serviceMonitor == nil {
			t.Errorf("services: %+v", r.services)
		}
	})
	t.Run("existing ConfigMap", func(t *testing.T) {
		r := mustRender(t, `{existingConfigMap: my-config, configKey: gw.yaml}`)
		if vs := volumeSource(t, r.deployment); vs.ConfigMap == nil || vs.ConfigMap.Name != "my-config" || len(r.configMaps) != 0 ||
			r.deployment.Spec.Template.Spec.Containers[0].Args[1] != "/etc/toolgate/gw.yaml" {
			t.Errorf("volume %+v, %d configmaps rendered", vs, len(r.configMaps))
		}
	})
	t.Run("existing Secret", func(t *testing.T) {
		r := mustRender(t, `{existingSecret: my-secret}`)
		if vs := volumeSource(t, r.deployment); vs.Secret == nil || vs.Secret.SecretName != "my-secret" || len(r.configMaps) != 0 {
			t.Errorf("volume %+v", vs)
		}
	})
	t.Run("monitoring", func(t *testing.T) {
		r := mustRender(t, `
serviceMonitor: {enabled: true, interval: 30s, labels: {release: prom}}
grafanaDashboard: {enabled: true}
env: [{name: OPENAI_API_KEY, valueFrom: {secretKeyRef: {name: openai, key: api-key}}}]
resources: {requests: {cpu: "1", memory: 256Mi}, limits: {memory: 1Gi}}
`)
		sm := r.serviceMonitor
		if sm == nil || sm.Spec.Endpoints[0].Port != "admin" || string(sm.Spec.Endpoints[0].Interval) != "30s" || sm.Labels["release"] != "prom" {
			t.Errorf("servicemonitor: %+v", sm)
		}
		var dash *corev1.ConfigMap
		for _, cm := range r.configMaps {
			if cm.Labels["grafana_dashboard"] == "1" {
				dash = cm
			}
		}
		if dash == nil || !strings.Contains(dash.Data["toolgate.json"], "toolgate_requests_total") {
			t.Error("no Grafana dashboard ConfigMap with the dashboard")
		}
		if e := r.deployment.Spec.Template.Spec.Containers[0].Env; len(e) != 1 || e[0].ValueFrom.SecretKeyRef.Name != "openai" {
			t.Errorf("env: %+v", e)
		}
	})
	for name, values := range map[string]string{
		"unknown mode":           `{mode: daemon}`,
		"sidecar without an app": `{mode: sidecar}`,
		"both config sources":    `{existingConfigMap: a, existingSecret: b}`,
	} {
		if _, err := render(t, values); err == nil {
			t.Errorf("%s: rendered without an error", name)
		}
	}
}
