#!/usr/bin/env bash
# mkcerts.sh DIR: the certificates the TLS tests need, made with the openssl
# CLI at test time (no key is ever committed). EC P-256 keys: a set takes
# well under a second. In DIR:
#   ca.{crt,key}            the CA the server and the clients trust
#   server.{crt,key}        CN localhost, SAN DNS:localhost and IP:127.0.0.1
#   server2.{crt,key}       the same names, another key: what a reload
#                           installs (O=rhkv-test-2 tells it apart)
#   client.{crt,key}        a client certificate signed by the CA
#   ca2.{crt,key}           another CA, trusted by nobody
#   wrongca.{crt,key}       a client certificate signed by ca2
#   expired.{crt,key}       a server certificate (names as server.crt,
#                           signed by the CA) that expired in 2020
set -euo pipefail

dir=${1:?usage: mkcerts.sh DIR}
mkdir -p "$dir"
cd "$dir"

# newkey NAME: an EC P-256 key in NAME.key.
newkey() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out "$1.key" 2>/dev/null
}

# ca NAME CN: a self-signed CA.
ca() {
	newkey "$1"
	openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 30 \
		-subj "/O=rhkv-test/CN=$2" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}

# server_ext, client_ext: the extensions of a leaf (openssl x509 -extfile).
server_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1'
client_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth'

# leaf NAME CA SUBJECT EXTENSIONS: a certificate for a new key, signed by CA.
leaf() {
	newkey "$1"
	openssl req -new -key "$1.key" -subj "$3" -out "$1.csr" 2>/dev/null
	openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" \
		-CAcreateserial -days 30 -extfile <(printf '%s\n' "$4") \
		-out "$1.crt" 2>/dev/null
	rm -f "$1.csr"
}

ca ca 'rhkv test CA'
ca ca2 'rhkv other CA'
leaf server ca '/O=rhkv-test/CN=localhost' "$server_ext"
leaf server2 ca '/O=rhkv-test-2/CN=localhost' "$server_ext"
leaf client ca '/O=rhkv-test/CN=rhkv client' "$client_ext"
leaf wrongca ca2 '/O=rhkv-test/CN=rhkv client of the other CA' "$client_ext"

# The expired one: openssl x509 (3.0) cannot backdate, `openssl ca` can
# (-startdate/-enddate), with a throwaway database.
newkey expired
openssl req -new -key expired.key -subj '/O=rhkv-test-expired/CN=localhost' \
	-out expired.csr 2>/dev/null
mkdir -p ca.db
: >ca.db/index.txt
cat >ca.db/ca.cnf <<EOF
[ca]
default_ca = test
[test]
database = ca.db/index.txt
new_certs_dir = ca.db
serial = ca.db/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
organizationName = optional
commonName = supplied
[ext]
$server_ext
EOF
echo 1000 >ca.db/serial
openssl ca -batch -config ca.db/ca.cnf -cert ca.crt -keyfile ca.key \
	-startdate 20200101000000Z -enddate 20200102000000Z -extensions ext \
	-notext -in expired.csr -out expired.crt 2>/dev/null
rm -rf ca.db expired.csr ./*.srl
chmod 600 ./*.key
