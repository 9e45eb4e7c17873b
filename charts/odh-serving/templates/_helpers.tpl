{{/*
Names are fixed (see /work/contracts.md): the controller, the webhook and
the gateways are found by name, so they do not carry the release name. One
odh-serving per cluster.
*/}}

{{/* The namespace of the controller, the shared presets and the gateways. */}}
{{- define "odh-serving.namespace" -}}
{{- default .Release.Namespace .Values.systemNamespace -}}
{{- end -}}

{{/* Labels on everything the chart renders. */}}
{{- define "odh-serving.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: odh-serving
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: odh-serving
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The controller pods' selector; never changes, a Deployment's selector is immutable. */}}
{{- define "odh-serving.selectorLabels" -}}
app.kubernetes.io/name: odh-serving
app.kubernetes.io/component: controller
{{- end -}}

{{/*
An image moved to .Values.imageRegistry, as the controller's --image-registry
moves the presets' images (engine.MirrorImage): the first path element is
the registry when it holds a dot or a colon or is localhost; Docker Hub's
one-element names gain library/. Call with (list $ $ref).
*/}}
{{- define "odh-serving.mirror" -}}
{{- $root := index . 0 -}}
{{- $ref := index . 1 -}}
{{- $registry := $root.Values.imageRegistry -}}
{{- if not $registry -}}
{{- $ref -}}
{{- else -}}
{{- $parts := splitList "/" $ref -}}
{{- $first := first $parts -}}
{{- if eq (len $parts) 1 -}}
{{- printf "%s/library/%s" $registry $ref -}}
{{- else if or (contains "." $first) (contains ":" $first) (eq $first "localhost") -}}
{{- printf "%s/%s" $registry (rest $parts | join "/") -}}
{{- else -}}
{{- printf "%s/%s" $registry $ref -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The controller image: by digest when one is given, else by tag (default:
appVersion), moved to imageRegistry when it is set.
*/}}
{{- define "odh-serving.image" -}}
{{- $image := .Values.controller.image -}}
{{- $ref := "" -}}
{{- if $image.digest -}}
{{- $ref = printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- $ref = printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- include "odh-serving.mirror" (list . $ref) -}}
{{- end -}}

{{/* imagePullSecrets of a pod the chart runs; call with (list $ $extra). */}}
{{- define "odh-serving.imagePullSecrets" -}}
{{- $root := index . 0 -}}
{{- $secrets := concat $root.Values.imagePullSecrets (index . 1) -}}
{{- with $secrets -}}
imagePullSecrets:
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/* The webhook Service's DNS names, for certificates. */}}
{{- define "odh-serving.webhookDNSNames" -}}
{{- $ns := include "odh-serving.namespace" . -}}
- odh-serving-webhook
- odh-serving-webhook.{{ $ns }}
- odh-serving-webhook.{{ $ns }}.svc
- odh-serving-webhook.{{ $ns }}.svc.cluster.local
{{- end -}}

{{/* Namespace of the ingress gateway: its own value, else the system namespace. */}}
{{- define "odh-serving.ingressNamespace" -}}
{{- default (include "odh-serving.namespace" .) .Values.gateways.ingress.namespace -}}
{{- end -}}

{{/* Namespace of the internal gateway: its own value, else the system namespace. */}}
{{- define "odh-serving.internalNamespace" -}}
{{- default (include "odh-serving.namespace" .) .Values.gateways.internal.namespace -}}
{{- end -}}

{{/* The internal gateway's class: its own value, else the ingress gateway's. */}}
{{- define "odh-serving.internalClass" -}}
{{- default .Values.gateways.ingress.gatewayClassName .Values.gateways.internal.gatewayClassName -}}
{{- end -}}

{{/*
The Service the gateway implementation makes for the internal gateway.
Istio (and OpenShift's gateway) name it <gateway>-<class>.
*/}}
{{- define "odh-serving.internalService" -}}
{{- default (printf "%s-%s" .Values.gateways.internal.name (include "odh-serving.internalClass" .)) .Values.gateways.internal.serviceName -}}
{{- end -}}

{{/*
Where the internal gateway's certificate comes from: its own value, else the
certMode (self-signed has no gateway certificates: bring a Secret).
*/}}
{{- define "odh-serving.internalTLSSource" -}}
{{- $source := .Values.gateways.internal.tls.source -}}
{{- if not $source -}}
{{- $source = ternary "secret" .Values.certMode (eq .Values.certMode "self-signed") -}}
{{- end -}}
{{- $source -}}
{{- end -}}

{{/*
The namespaces the controller's namespaced rights are granted in: every
watched namespace and the system namespace, or none (= cluster-wide) when it
watches all.
*/}}
{{- define "odh-serving.roleNamespaces" -}}
{{- $namespaces := list -}}
{{- if .Values.watchNamespaces -}}
{{- $namespaces = append .Values.watchNamespaces (include "odh-serving.namespace" .) | uniq | sortAlpha -}}
{{- end -}}
{{- toJson $namespaces -}}
{{- end -}}

{{/*
The allowedRoutes of a listener the chart makes: gateways.allowedRoutes,
checked.
*/}}
{{- define "odh-serving.allowedRoutes" -}}
{{- $a := .Values.gateways.allowedRoutes.namespaces -}}
{{- if not (has $a.from (list "All" "Selector" "Same")) -}}
{{- fail (printf "gateways.allowedRoutes.namespaces.from: %q; want All, Selector or Same" $a.from) -}}
{{- end -}}
{{- $sel := $a.selector | default dict -}}
{{- if and (eq $a.from "Selector") (not (or $sel.matchLabels $sel.matchExpressions)) -}}
{{- fail "gateways.allowedRoutes.namespaces.selector: from: Selector needs a label selector (matchLabels or matchExpressions) naming the namespaces whose routes the gateways admit" -}}
{{- end -}}
namespaces:
  from: {{ $a.from }}
  {{- if eq $a.from "Selector" }}
  selector:
    {{- with $sel.matchLabels }}
    matchLabels:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $sel.matchExpressions }}
    matchExpressions:
      {{- toYaml . | nindent 6 }}
    {{- end }}
  {{- end }}
{{- end }}
