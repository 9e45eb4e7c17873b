{{/*
The SubjectAccessReview resource attributes of the LLMInferenceService a
request's path names: /<namespace>/<name>/... Authorino evaluates the
expressions (CEL) on each request. Only the MaaS gateway's policy still
uses it; the ingress and internal gateways' policies are a default deny,
and each service's own policy names the service literally (docs/auth.md).
Call with the verb: include "odh-serving.pathServiceAttributes" "post".
*/}}
{{- define "odh-serving.pathServiceAttributes" -}}
group:
  value: serving.kserve.io
resource:
  value: llminferenceservices
namespace:
  expression: request.path.split("/")[1]
name:
  expression: request.path.split("/")[2]
verb:
  value: {{ . }}
{{- end -}}

{{/*
A gateway's AuthPolicy (docs/auth.md): a default deny. Every request is
refused (403, the message below) unless a more specific policy covers its
route: the engine renders one per protected service's route,
<route>-authn, whose TokenReview and SubjectAccessReview name that
service by its literal namespace and name, and an anonymous one for a
service opened with the enable-auth annotation. So a route that no
service's policy covers (applied before its policy, a policy deleted, a
route of someone else's) is refused, never served open. Call with a dict:
root (the chart's context), name and namespace (the Gateway's).
*/}}
{{- define "odh-serving.gatewayAuthPolicy" -}}
apiVersion: kuadrant.io/v1
kind: AuthPolicy
metadata:
  name: {{ .name }}-authn
  namespace: {{ .namespace }}
  labels:
    {{- include "odh-serving.labels" .root | nindent 4 }}
    app.kubernetes.io/component: auth
  annotations:
    {{- include "odh-serving.policyWave" . | nindent 4 }}
spec:
  targetRef:
    group: gateway.networking.k8s.io
    kind: Gateway
    name: {{ .name }}
  defaults:
    strategy: atomic
    rules:
      authorization:
        deny-all:
          opa:
            rego: allow = false
      response:
        unauthorized:
          message:
            value: no service policy covers this route
{{- end -}}

{{/*
The sync wave of Kuadrant's policies: Argo CD applies them before anything
else of the release (wave 0, the services 1), so without Kuadrant's CRDs
that wave fails and the sync stops before a route could be served
unchecked (docs/auth.md). Helm ignores it.
*/}}
{{- define "odh-serving.policyWave" -}}
argocd.argoproj.io/sync-wave: "-1"
{{- end -}}
