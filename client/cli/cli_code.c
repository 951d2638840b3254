/*
 * The short names rhkv-cli prints for librhkv's error codes, in
 * "(error) CODE: message" lines.
 */
#include "cli_code.h"

#include "rhkv.h"

const char *cli_code_name(int err)
{
	switch (err) {
	case RHKV_ENOTFOUND:
		return "NOT_FOUND";
	case RHKV_ENOTSTORED:
		return "NOT_STORED";
	case RHKV_EEXISTS:
		return "EXISTS";
	case RHKV_ETOOLARGE:
		return "TOO_LARGE";
	case RHKV_EBADKEY:
		return "BAD_KEY";
	case RHKV_ETIMEDOUT:
		return "TIMEOUT";
	case RHKV_ECONN:
		return "CONN";
	case RHKV_ESERVER:
		return "SERVER_ERROR";
	case RHKV_EPROTO:
		return "PROTOCOL";
	case RHKV_ENONNUMERIC:
		return "NON_NUMERIC";
	case RHKV_ENOMEM:
		return "NO_MEMORY";
	case RHKV_EINVAL:
		return "INVALID";
	case RHKV_ERANGE:
		return "RANGE";
	case RHKV_EAUTH:
		return "AUTH";
	case RHKV_ETLS:
		return "TLS";
	default:
		return "ERROR";
	}
}
