{{/* The release's name: edge, edge-config, edge-internal and edge-redis for `helm install edge`. */}}
{{- define "edge.fullname" -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "edge.selectorLabels" -}}
app.kubernetes.io/name: edge
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "edge.labels" -}}
{{ include "edge.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "edge.redisSelectorLabels" -}}
app.kubernetes.io/name: edge-redis
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "edge.redisLabels" -}}
{{ include "edge.redisSelectorLabels" . }}
app.kubernetes.io/part-of: edge
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "edge.redisAddress" -}}
{{- if .Values.redis.builtin.enabled -}}
{{ include "edge.fullname" . }}-redis:6379
{{- else -}}
{{ required "set redis.address (host:port of a Redis) or redis.builtin.enabled" .Values.redis.address }}
{{- end -}}
{{- end -}}

{{/* The key of the Secret that holds the Redis password: config.registry.redis.password_file. */}}
{{- define "edge.redisPasswordKey" -}}
{{- dig "registry" "redis" "password_file" "" .Values.config -}}
{{- end -}}

{{/*
edge.secretFiles walks a config (map or list) and makes each relative file name (the value of a
key "file" or "*_file") a file of the Secret mounted at /etc/edge/secrets.
*/}}
{{- define "edge.secretFiles" -}}
{{- if kindIs "map" . -}}
{{- range $k, $v := . -}}
{{- if and (kindIs "string" $v) (or (eq $k "file") (hasSuffix "_file" $k)) (not (hasPrefix "/" $v)) -}}
{{- $_ := set $ $k (printf "/etc/edge/secrets/%s" $v) -}}
{{- else -}}
{{- include "edge.secretFiles" $v -}}
{{- end -}}
{{- end -}}
{{- else if kindIs "slice" . -}}
{{- range . }}{{ include "edge.secretFiles" . }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
edge.config is edge.yaml: .Values.config with the listeners on the container's ports, the pod's
own internal URL given by --advertise-internal (this one is a placeholder), the TLS Secret's
files, the registry's address and the Secret's file paths.
*/}}
{{- define "edge.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- include "edge.secretFiles" $c -}}
{{- $listen := dict "public" ":8080" "internal" ":8081" "ops" ":9090" "advertise_internal" "http://edge-internal.invalid:8081" -}}
{{- $_ := set $c "listen" (merge $listen ($c.listen | default dict)) -}}
{{- if .Values.tlsSecret -}}
{{- $static := dict "static" (dict "cert_file" "/etc/edge/tls/tls.crt" "key_file" "/etc/edge/tls/tls.key") -}}
{{- $_ := set $c "tls" (merge $static ($c.tls | default dict)) -}}
{{- end -}}
{{- $registry := $c.registry | default dict -}}
{{- $_ := set $registry "redis" (merge (dict "addr" (include "edge.redisAddress" .)) ($registry.redis | default dict)) -}}
{{- $_ := set $c "registry" $registry -}}
{{- toYaml $c -}}
{{- end -}}
