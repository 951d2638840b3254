/*
 * The cursor scan stress (scan_stress.c) as a plain executable, without
 * criterion, so that TSan builds run it too. Exits 0 when every check passed.
 */
#include "scan_stress.h"

#include "common/rcu.h"

int main(void)
{
	struct scan_stress_config cfg;
	struct scan_stress_result res;
	int err;

	scan_stress_config_from_env(&cfg);
	rhkv_rcu_register_thread();
	err = scan_stress_run(&cfg, &res);
	rhkv_rcu_unregister_thread();
	scan_stress_print(&res, stdout);
	return err ? 1 : 0;
}
