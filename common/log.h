/*
 * Logging to stderr: one line per message, with a UTC timestamp, the
 * program name and pid, and a level. Messages above the configured level
 * are dropped. Safe from any thread (one write per line).
 */
#ifndef RHKV_COMMON_LOG_H
#define RHKV_COMMON_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_init(const char *name, enum log_level level);
/* Changes the level; from any thread, at any time (an atomic store). */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

__attribute__((format(printf, 2, 3))) void log_msg(enum log_level level,
						   const char *fmt, ...);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
