/*
 * rhkv-cli's names of librhkv's error codes: RHKV_ENOTFOUND is NOT_FOUND,
 * RHKV_ECONN is CONN, and so on ("ERROR" for a code it does not know).
 */
#ifndef RHKV_CLI_CODE_H
#define RHKV_CLI_CODE_H

const char *cli_code_name(int err);

#endif
