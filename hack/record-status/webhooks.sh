# Sourced by recording scripts whose operator cannot run without its admission webhooks (or
# whose controller relies on them, e.g. to label pods): serve the operator's own webhooks from
# its process on 127.0.0.1 and register them with the test API server by URL, not by Service.
#
# webhook_certs DIR: a self-signed serving certificate for 127.0.0.1 (DIR/tls.crt, DIR/tls.key),
# the layout controller-runtime's webhook server reads from its CertDir.
webhook_certs() {
	mkdir -p "$1"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$1/tls.key" -out "$1/tls.crt" 2>/dev/null
}

# webhook_register MANIFEST PORT CERTDIR [PREFIX]: apply the operator's (Mutating|Validating)
# WebhookConfigurations from MANIFEST (its config/webhook/manifests.yaml), each clientConfig
# pointed at https://127.0.0.1:PORT<path> with CERTDIR/tls.crt as the CA bundle, each name
# prefixed with PREFIX (two operators' kubebuilder defaults, e.g. mutating-webhook-configuration, collide).
webhook_register() {
	python3 - "$1" "$2" "$3/tls.crt" "${4:-}" <<'PY' | kubectl apply -f - >/dev/null
import base64, sys, yaml
manifest, port, ca, prefix = sys.argv[1:]
bundle = base64.b64encode(open(ca, "rb").read()).decode()
docs = [d for d in yaml.safe_load_all(open(manifest)) if d and d.get("kind", "").endswith("WebhookConfiguration")]
for d in docs:
    d["metadata"]["name"] = prefix + d["metadata"]["name"]
    for w in d.get("webhooks", []):
        path = w["clientConfig"].get("service", {}).get("path", "/")
        w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
print(yaml.safe_dump_all(docs))
PY
}
