#!/bin/sh
# Certificates for the TLS tests, made fresh in DIR at test time (keys are
# never kept in the tree): a CA, a server certificate for localhost and
# 127.0.0.1 signed by it, a client certificate signed by it, and a second,
# unrelated CA. All EC P-256, valid for two days.
#   gen_certs.sh DIR  ->  DIR/{ca,server,client,other-ca}.{crt,key}
set -eu
dir=${1:?usage: gen_certs.sh DIR}
cd "$dir"
umask 077

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
	-out "$1.key"; }
ca() {
	key "$1"
	openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 2 \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign -out "$1.crt"
}
# leaf NAME CN EXTENSIONS: NAME.crt signed by ca
leaf() {
	key "$1"
	openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
	printf '%s\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key \
		-CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" \
		2>/dev/null
	rm -f "$1.csr" "$1.ext"
}

ca ca rhkv-test-ca
ca other-ca rhkv-test-other-ca
leaf server localhost "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client rhkv-test-client "extendedKeyUsage=clientAuth"
