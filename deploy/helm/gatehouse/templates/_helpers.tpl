{{/* The release's name prefix of every object. */}}
{{- define "gatehouse.fullname" -}}
{{- if contains "gatehouse" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-gatehouse" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "gatehouse.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: gatehouse
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gatehouse
{{- end -}}

{{/* The pods of one release (every stage). */}}
{{- define "gatehouse.instanceSelector" -}}
app.kubernetes.io/name: gatehouse
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pods of one stage: (dict "root" $ "component" "serve"). */}}
{{- define "gatehouse.selector" -}}
{{ include "gatehouse.instanceSelector" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gatehouse.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The port of a listen address (":8080", "0.0.0.0:8080", "[::]:8080"). */}}
{{- define "gatehouse.port" -}}
{{- $p := regexFind "[0-9]+$" . -}}
{{- if not $p -}}{{- fail (printf "config: listen address %q has no port" .) -}}{{- end -}}
{{- $p -}}
{{- end -}}

{{- define "gatehouse.httpPort" -}}
{{- include "gatehouse.port" (.Values.config.listen | default ":8080") -}}
{{- end -}}

{{- define "gatehouse.adminPort" -}}
{{- $a := .Values.config.admin_listen | default "127.0.0.1:9090" -}}
{{- if or (hasPrefix "127." $a) (hasPrefix "localhost" $a) (hasPrefix "[::1]" $a) -}}
{{- fail (printf "config.admin_listen is %q, a loopback address: the kubelet's probes and Prometheus cannot reach it (set it to \":9090\")" $a) -}}
{{- end -}}
{{- include "gatehouse.port" $a -}}
{{- end -}}

{{/*
Every file: and env: reference of config must be provided by a Secret
named in secretFiles or secretEnv; rendering fails naming the reference.
*/}}
{{- define "gatehouse.checkSecretRefs" -}}
{{- $cfg := toYaml .Values.config -}}
{{- range $ref := regexFindAll "\\b(file|env):[^\\s\"']+" $cfg -1 -}}
{{- if hasPrefix "file:" $ref -}}
{{- $path := trimPrefix "file:" $ref -}}
{{- $ok := false -}}
{{- range $.Values.secretFiles -}}
{{- if hasPrefix (printf "%s/" (trimSuffix "/" .mountPath)) $path -}}{{- $ok = true -}}{{- end -}}
{{- end -}}
{{- if not $ok -}}
{{- fail (printf "config refers to %s, but no secretFiles entry mounts a Secret at its directory" $ref) -}}
{{- end -}}
{{- else -}}
{{- $name := trimPrefix "env:" $ref -}}
{{- $ok := false -}}
{{- range $.Values.secretEnv -}}
{{- if eq .name $name -}}{{- $ok = true -}}{{- end -}}
{{- end -}}
{{- if not $ok -}}
{{- fail (printf "config refers to %s, but no secretEnv entry sets %s from a Secret" $ref $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pod-level security context: non-root, RuntimeDefault seccomp. */}}
{{- define "gatehouse.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{/* The container's security context. */}}
{{- define "gatehouse.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  privileged: false
  capabilities:
    drop: [ALL]
{{- end -}}

{{/*
The pod template of a stage: (dict "root" $ "component" "relay"
"configMap" name "values" .Values.relay "ports" list "probes" bool).
*/}}
{{- define "gatehouse.podTemplate" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
metadata:
  labels:
    {{- include "gatehouse.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ toYaml $v.config | sha256sum }}
    {{- with $v.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- if .restartPolicy }}
  restartPolicy: {{ .restartPolicy }}
  {{- end }}
  {{- with $v.serviceAccountName }}
  serviceAccountName: {{ . }}
  {{- end }}
  automountServiceAccountToken: false
  {{- with .grace }}
  terminationGracePeriodSeconds: {{ . }}
  {{- end }}
  {{- include "gatehouse.podSecurityContext" $root | nindent 2 }}
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .spread }}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels:
                {{- include "gatehouse.selector" (dict "root" $root "component" .component) | nindent 16 }}
  {{- end }}
  containers:
    - name: gatehouse
      image: {{ include "gatehouse.image" $root }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      args: [{{ .component | quote }}, "--config", "/etc/gatehouse/gatehouse.yaml"]
      {{- with $v.secretEnv }}
      env:
        {{- range . }}
        - name: {{ .name }}
          valueFrom:
            secretKeyRef:
              name: {{ .secretName }}
              key: {{ .key }}
        {{- end }}
      {{- end }}
      {{- if .probes }}
      ports:
        {{- if .public }}
        - name: http
          containerPort: {{ include "gatehouse.httpPort" $root }}
          protocol: TCP
        {{- end }}
        - name: admin
          containerPort: {{ include "gatehouse.adminPort" $root }}
          protocol: TCP
      startupProbe:
        httpGet: {path: /healthz, port: admin}
        periodSeconds: 2
        failureThreshold: 30
      readinessProbe:
        httpGet: {path: /readyz, port: admin}
        periodSeconds: 5
        failureThreshold: 2
      livenessProbe:
        httpGet: {path: /healthz, port: admin}
        periodSeconds: 10
        failureThreshold: 3
      {{- end }}
      resources:
        {{- toYaml .values.resources | nindent 8 }}
      {{- include "gatehouse.containerSecurityContext" $root | nindent 6 }}
      volumeMounts:
        - name: config
          mountPath: /etc/gatehouse/gatehouse.yaml
          subPath: gatehouse.yaml
          readOnly: true
        {{- range $i, $s := $v.secretFiles }}
        - name: secret-{{ $i }}
          mountPath: {{ $s.mountPath }}
          readOnly: true
        {{- end }}
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: config
      configMap:
        name: {{ .configMap }}
    {{- range $i, $s := $v.secretFiles }}
    - name: secret-{{ $i }}
      secret:
        secretName: {{ $s.secretName }}
        defaultMode: 0440
    {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
{{- end -}}

{{/*
The Service of a stage's admin listener, scraped by the ServiceMonitor;
its label gatehouse-job names the scrape job as the alert rules expect
(gatehouse-serve, gatehouse-relay, gatehouse-consume).
*/}}
{{- define "gatehouse.adminService" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "gatehouse.fullname" .root }}-{{ .component }}-admin
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "gatehouse.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    gatehouse-admin: "true"
    gatehouse-job: gatehouse-{{ .component }}
spec:
  type: ClusterIP
  selector:
    {{- include "gatehouse.selector" . | nindent 4 }}
  ports:
    - name: admin
      port: {{ include "gatehouse.adminPort" .root }}
      targetPort: admin
      protocol: TCP
{{- end -}}
