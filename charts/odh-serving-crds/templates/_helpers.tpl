{{/*
odh-serving-crds.crd emits one CRD file from files/ as it is, with
helm.sh/resource-policy: keep and, for our own CRDs (.serving), the
conversion webhook and its CA injection annotation. The file is never run as
a template. Arguments: root (the chart context), path, serving (bool).
*/}}
{{- define "odh-serving-crds.crd" -}}
{{- $text := trimPrefix "---\n" (.root.Files.Get .path) -}}
{{- $annotations := "\nmetadata:\n  annotations:\n" -}}
{{- $spec := "\nspec:\n" -}}
{{- if not (contains $annotations $text) -}}
{{- fail (printf "%s: no metadata.annotations at the top of the CRD; the file changed shape, adapt charts/odh-serving-crds/templates/_helpers.tpl" .path) -}}
{{- end -}}
{{- if and .serving (contains "\n  conversion:\n" $text) -}}
{{- fail (printf "%s: the CRD already has spec.conversion; the chart sets it" .path) -}}
{{- end -}}
{{- $add := "    helm.sh/resource-policy: keep\n" -}}
{{- if .serving -}}
{{- $add = printf "%s%s" $add (include "odh-serving-crds.caAnnotation" .root) -}}
{{- end -}}
{{- $text = replace $annotations (printf "%s%s" $annotations $add) $text -}}
{{- if .serving -}}
{{- $text = replace $spec (printf "\nspec:%s\n" (include "odh-serving-crds.conversion" .root)) $text -}}
{{- end -}}
---
{{ $text }}
{{- end -}}

{{/* The annotation that has the conversion webhook's CA injected. */}}
{{- define "odh-serving-crds.caAnnotation" -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.externalURL) -}}
{{- if eq .Values.certMode "cert-manager" -}}
{{ printf "    cert-manager.io/inject-ca-from: %s/odh-serving-webhook-cert\n" .Values.systemNamespace }}
{{- else if eq .Values.certMode "service-ca" -}}
{{ print "    service.beta.openshift.io/inject-cabundle: \"true\"\n" }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* spec.conversion of our CRDs, indented under spec; starts with a newline. */}}
{{- define "odh-serving-crds.conversion" }}
  conversion:
{{- if .Values.webhook.enabled }}
    strategy: Webhook
    webhook:
      conversionReviewVersions:
      - v1
      clientConfig:
{{- if .Values.webhook.externalURL }}
        url: {{ printf "%s/convert" (trimSuffix "/" .Values.webhook.externalURL) | quote }}
{{- else }}
        service:
          name: odh-serving-webhook
          namespace: {{ .Values.systemNamespace }}
          path: /convert
          port: 443
{{- end }}
{{- with .Values.webhook.caBundle }}
        caBundle: {{ . | quote }}
{{- end }}
{{- else }}
    strategy: None
{{- end }}
{{- end -}}
