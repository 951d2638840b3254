/*
 * Logging to stderr with a timestamp and a level; see log.h.
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static const char *log_name = "rhkv";
static _Atomic int log_level = LOG_INFO;

void log_init(const char *name, enum log_level level)
{
	log_name = name;
	log_set_level(level);
}

void log_set_level(enum log_level level)
{
	atomic_store(&log_level, level);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load(&log_level);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "ERROR", "WARN", "INFO", "DEBUG" };
	char line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if ((int)level > atomic_load(&log_level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
		     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_name,
		     (int)getpid(), names[level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line, so lines of threads do not interleave. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
