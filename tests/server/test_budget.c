/*
 * The --conn-memory queue (server/net/conn_budget.c) on its own, with
 * connections that are only their budget fields and a transport whose
 * wake records the order: room is taken while it fits; past it the first
 * taker gets the overdraft and the next ones queue; bytes given back wake
 * the queue in order with their room reserved; the overdraft passes on
 * when released (and a holder that gave it up queues again for more); a
 * cancelled waiter gives back what was reserved for it; nothing is left
 * counted at the end.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "server/net/conn.h"
#include "server/net/conn_budget.h"
#include "server/net/transport.h"

#define LIMIT 1000

static struct conn_budget b;
static struct conn conns[4];
static struct conn *woken[8];
static int nwoken;

static void record_wake(struct conn *c)
{
	cr_assert_lt(nwoken, 8);
	woken[nwoken++] = c;
}

static const struct transport fake = { .name = "fake", .wake = record_wake };

static void setup(void)
{
	conn_budget_init(&b, LIMIT);
	memset(conns, 0, sizeof(conns));
	for (int i = 0; i < 4; i++)
		conns[i].transport = &fake;
	nwoken = 0;
}

static void teardown(void)
{
	conn_budget_destroy(&b);
}

TestSuite(budget, .init = setup, .fini = teardown, .timeout = 30);

static int64_t total(void)
{
	return atomic_load(&b.bytes);
}

Test(budget, room_is_taken_while_it_fits_then_the_overdraft_then_a_queue)
{
	conn_budget_account(&b, &conns[0], 900); /* buffers of 900 bytes */
	cr_assert(conn_budget_take(&b, &conns[1], 100), "fits: 1000");
	cr_assert_not(conns[1].budget_over);
	cr_assert_eq(total(), 1000);
	/* Past the limit: the first taker may pass it, alone. */
	cr_assert(conn_budget_take(&b, &conns[2], 50));
	cr_assert(conns[2].budget_over);
	cr_assert(conn_budget_take(&b, &conns[2], 50), "the holder grows on");
	cr_assert_not(conn_budget_take(&b, &conns[3], 10));
	cr_assert(conns[3].budget_wait);
	cr_assert_eq(total(), 1100);
	/* The holder's request has arrived: the overdraft passes on, with
	 * its room reserved, and the wake says so. */
	conn_budget_release(&b, &conns[2]);
	cr_assert_eq(nwoken, 1);
	cr_assert_eq(woken[0], &conns[3]);
	cr_assert_eq(total(), 1110, "the room is reserved at the wake");
	cr_assert(conn_budget_take(&b, &conns[3], 10), "woken: granted");
	cr_assert(conns[3].budget_over);
	cr_assert_not(conns[3].budget_wait);
	cr_assert_eq(total(), 1110, "counted once");
	cr_assert_eq(conns[3].accounted, 10);
	conn_budget_cancel(&b, &conns[3]);
	for (int i = 0; i < 4; i++)
		conn_budget_account(&b, &conns[i], 0);
	cr_assert_eq(total(), 0);
}

Test(budget, bytes_given_back_wake_the_queue_in_order)
{
	conn_budget_account(&b, &conns[0], 2000); /* far past the limit */
	cr_assert(conn_budget_take(&b, &conns[1], 100), "the overdraft");
	cr_assert_not(conn_budget_take(&b, &conns[2], 300));
	cr_assert_not(conn_budget_take(&b, &conns[3], 200));
	cr_assert_not(conn_budget_take(&b, &conns[3], 200), "still queued");
	cr_assert_eq(nwoken, 0);
	/* 1400 back (700 counted): the head (300) fits, the next (200)
	 * does not, and the overdraft is held: one wake. */
	conn_budget_account(&b, &conns[0], 600);
	cr_assert_eq(nwoken, 1);
	cr_assert_eq(woken[0], &conns[2]);
	cr_assert_eq(total(), 1000, "700 and 300 reserved");
	/* 200 more back: room for the next. */
	conn_budget_account(&b, &conns[0], 400);
	cr_assert_eq(nwoken, 2);
	cr_assert_eq(woken[1], &conns[3]);
	cr_assert_eq(total(), 1000);
	cr_assert_eq(atomic_load(&b.waiting), 0);
	/* Woken, then gone before it read: its reservation goes back. */
	conn_budget_cancel(&b, &conns[3]);
	cr_assert_eq(total(), 800);
	cr_assert(conn_budget_take(&b, &conns[2], 300));
	cr_assert_not(conns[2].budget_over);
	conn_budget_cancel(&b, &conns[1]); /* gives back the overdraft */
	cr_assert_null(b.overdraft);
	for (int i = 0; i < 4; i++)
		conn_budget_account(&b, &conns[i], 0);
	cr_assert_eq(total(), 0);
}

Test(budget, a_waiter_that_leaves_lets_the_next_one_through)
{
	conn_budget_account(&b, &conns[0], 2000);
	cr_assert(conn_budget_take(&b, &conns[1], 100), "the overdraft");
	cr_assert_not(conn_budget_take(&b, &conns[2], 100));
	cr_assert_not(conn_budget_take(&b, &conns[3], 100));
	/* The first waiter closes: out of the queue, no wake for it. */
	conn_budget_cancel(&b, &conns[2]);
	cr_assert_eq(nwoken, 0);
	/* The holder closes: the overdraft goes to the one left. */
	conn_budget_cancel(&b, &conns[1]);
	cr_assert_eq(nwoken, 1);
	cr_assert_eq(woken[0], &conns[3]);
	cr_assert_eq(b.overdraft, &conns[3]);
	cr_assert(conn_budget_take(&b, &conns[3], 100));
	for (int i = 0; i < 4; i++) {
		conn_budget_cancel(&b, &conns[i]);
		conn_budget_account(&b, &conns[i], 0);
	}
	cr_assert_eq(total(), 0);
}

/* A holder that stalls gives the overdraft up while others wait
 * (conn.c): it keeps what it took and, needing more, queues again behind
 * the new holder instead of passing the limit a second time. */
Test(budget, a_holder_that_gave_the_overdraft_up_queues_again)
{
	conn_budget_account(&b, &conns[0], 2000);
	cr_assert_not(conn_budget_waiting(&b));
	cr_assert(conn_budget_take(&b, &conns[1], 100), "the overdraft");
	cr_assert_not(conn_budget_take(&b, &conns[2], 100));
	cr_assert(conn_budget_waiting(&b));
	conn_budget_release(&b, &conns[1]);
	cr_assert_not(conns[1].budget_over);
	cr_assert_eq(b.overdraft, &conns[2]);
	cr_assert_eq(nwoken, 1);
	cr_assert_not(conn_budget_waiting(&b));
	cr_assert_eq(total(), 2200, "the first holder keeps its room");
	cr_assert_not(conn_budget_take(&b, &conns[1], 100), "queued again");
	cr_assert(conns[1].budget_wait);
	cr_assert(conn_budget_take(&b, &conns[2], 100), "woken: granted");
	conn_budget_release(&b, &conns[2]);
	cr_assert_eq(woken[1], &conns[1]);
	cr_assert(conn_budget_take(&b, &conns[1], 100));
	cr_assert(conns[1].budget_over);
	for (int i = 0; i < 4; i++) {
		conn_budget_cancel(&b, &conns[i]);
		conn_budget_account(&b, &conns[i], 0);
	}
	cr_assert_eq(total(), 0);
}
