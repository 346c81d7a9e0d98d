{{/*
The labels every object gets: manifests/base's two (app.kubernetes.io/name and part-of), and
Helm's own. aitj.selectorLabels select the operator's pods (the Deployment, Service, PDB,
NetworkPolicy and anti-affinity), as in manifests/base/deployment.yaml.
*/}}
{{- define "aitj.labels" -}}
app.kubernetes.io/name: aitj
app.kubernetes.io/part-of: aitj
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "aitj.selectorLabels" -}}
app.kubernetes.io/name: aitj
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator's image: repository@digest, else repository:tag (the appVersion by default). */}}
{{- define "aitj.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
The operator's rules (files/clusterrole.yaml, a copy of manifests/base/clusterrole.yaml, where
each rule says who uses it), split as manifests/single-namespace splits them: the cluster-scoped
rules that stay in the ClusterRole when the operator watches listed namespaces, and the
namespaced ones a Role grants in each. kopf's watch of CRDs is dropped there, as the component
drops it.
*/}}
{{- define "aitj.rules" -}}
{{- (.Files.Get "files/clusterrole.yaml" | fromYaml).rules | toYaml }}
{{- end }}

{{- define "aitj.clusterScopedRules" -}}
{{- $out := list }}
{{- range (include "aitj.rules" . | fromYamlArray) }}
{{- if lt (len (without .resources "nodes" "tokenreviews" "subjectaccessreviews")) (len .resources) }}
{{- $out = append $out . }}
{{- end }}
{{- end }}
{{- $out | toYaml }}
{{- end }}

{{- define "aitj.namespacedRules" -}}
{{- $out := list }}
{{- range (include "aitj.rules" . | fromYamlArray) }}
{{- if eq (len (without .resources "nodes" "tokenreviews" "subjectaccessreviews" "customresourcedefinitions")) (len .resources) }}
{{- $out = append $out . }}
{{- end }}
{{- end }}
{{- $out | toYaml }}
{{- end }}

{{/*
aitj.monitoringObject: a generated monitoring object of manifests/monitoring (copied to files/
by hack/gen_chart.py) in the release's namespace, with the chart's labels and, on the
ServiceMonitor and PrometheusRule, the `release` label kube-prometheus-stack selects by
(monitoring.release; empty: none). Called with (list $ "files/NAME.yaml").
*/}}
{{- define "aitj.monitoringObject" -}}
{{- $root := index . 0 }}
{{- $object := $root.Files.Get (index . 1) | fromYaml }}
{{- $labels := merge (include "aitj.labels" $root | fromYaml) ($object.metadata.labels | default dict) }}
{{- if has $object.kind (list "ServiceMonitor" "PrometheusRule") }}
{{- $labels = omit $labels "release" }}
{{- with $root.Values.monitoring.release }}
{{- $_ := set $labels "release" . }}
{{- end }}
{{- end }}
{{- $_ := set $object.metadata "labels" $labels }}
{{- $_ := set $object.metadata "namespace" $root.Release.Namespace }}
{{- toYaml $object }}
{{- end }}
