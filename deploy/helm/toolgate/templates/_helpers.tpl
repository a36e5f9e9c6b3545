{{/* The release's resource names: <release>-toolgate, or the release's name when it has toolgate in it. */}}
{{- define "toolgate.fullname" -}}
{{- if contains "toolgate" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-toolgate" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "toolgate.selectorLabels" -}}
app.kubernetes.io/name: toolgate
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "toolgate.labels" -}}
{{ include "toolgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The config's source: a ConfigMap (rendered or existing) or a Secret. */}}
{{- define "toolgate.configVolume" -}}
{{- if .Values.existingSecret -}}
secret: {secretName: {{ .Values.existingSecret | quote }}}
{{- else if .Values.existingConfigMap -}}
configMap: {name: {{ .Values.existingConfigMap | quote }}}
{{- else -}}
configMap: {name: {{ include "toolgate.fullname" . | quote }}}
{{- end -}}
{{- end -}}

{{/*
The toolgate container. A parent chart that runs toolgate beside its own
app can include it: {{ include "toolgate.container" . }}.
*/}}
{{- define "toolgate.container" -}}
- name: toolgate
  image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args: ["--config", "/etc/toolgate/{{ .Values.configKey }}"]
  {{- with .Values.env }}
  env:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    {{- if eq .Values.mode "service" }}
    - {name: http, containerPort: {{ .Values.ports.http }}}
    {{- end }}
    - {name: admin, containerPort: {{ .Values.ports.admin }}}
  readinessProbe:
    {{- toYaml .Values.readinessProbe | nindent 4 }}
  livenessProbe:
    {{- toYaml .Values.livenessProbe | nindent 4 }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - {name: toolgate-config, mountPath: /etc/toolgate, readOnly: true}
{{- end -}}
