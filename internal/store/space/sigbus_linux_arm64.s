#include "textflag.h"

// The SIGBUS handler of sigbus_linux.go, as sigbus_linux_amd64.s: the
// kernel calls it with R0 the signal, R1 the siginfo, R2 the ucontext,
// and LR the restorer. It uses no Go state.

#define SLOTS 16
#define SLOT 24
#define CHUNK 1048576
#define FULL 1048576
#define SYS_ftruncate 46
#define SYS_fstatfs 44
#define SYS_nanosleep 101
#define PAUSE 1000000
#define BUS_ADRERR 2

// func sigbusHandlerPC() uintptr
TEXT ·sigbusHandlerPC(SB),NOSPLIT,$0-8
	MOVD	$·sigbusHandler(SB), R0
	MOVD	R0, ret+0(FP)
	RET

// func sigbusHandler()
TEXT ·sigbusHandler(SB),NOSPLIT|NOFRAME,$0
	MOVW	8(R1), R3
	CMPW	$BUS_ADRERR, R3
	BNE	chain
	MOVD	R0, R19
	MOVD	R1, R20
	MOVD	R2, R21
	SUB	$128, RSP	// a struct statfs (120 bytes)
	MOVD	$·sigbusReserves(SB), R9
	MOVD	$SLOTS, R11

slot:
	ADD	$16, R9, R10	// &busy
inc:
	LDAXR	(R10), R4
	ADD	$1, R4
	STLXR	R4, (R10), R5
	CBNZ	R5, inc
	MOVD	8(R9), R4	// size
	CMP	$0, R4
	BLE	next
	MOVD	0(R9), R0
	MOVD	RSP, R1
	MOVD	$SYS_fstatfs, R8
	SVC	$0
	CBNZ	R0, next
	MOVD	32(RSP), R4	// f_bavail
	MOVD	8(RSP), R5	// f_bsize
	MUL	R5, R4
	MOVD	$FULL, R5
	CMP	R5, R4
	BGE	next

	// Full: let whoever filled it stop, then look again.
	MOVD	ZR, 0(RSP)	// tv_sec
	MOVD	$PAUSE, R4
	MOVD	R4, 8(RSP)	// tv_nsec
	MOVD	RSP, R0
	MOVD	ZR, R1
	MOVD	$SYS_nanosleep, R8
	SVC	$0
	MOVD	0(R9), R0
	MOVD	RSP, R1
	MOVD	$SYS_fstatfs, R8
	SVC	$0
	CBNZ	R0, next
	MOVD	32(RSP), R4
	MOVD	8(RSP), R5
	MUL	R5, R4
	MOVD	$FULL, R5
	CMP	R5, R4
	BGE	again	// room came back meanwhile

	ADD	$8, R9, R12	// &size
lower:
	LDAXR	(R12), R4
	CMP	$0, R4
	BLE	unlock
	SUB	$CHUNK, R4, R6
	CMP	$0, R6
	CSEL	LT, ZR, R6, R6	// max(size-CHUNK, 0)
	STLXR	R6, (R12), R5
	CBNZ	R5, lower
	MOVD	0(R9), R0
	MOVD	R6, R1
	MOVD	$SYS_ftruncate, R8
	SVC	$0
dec1:
	LDAXR	(R10), R4
	SUB	$1, R4
	STLXR	R4, (R10), R5
	CBNZ	R5, dec1
	MOVD	$·sigbusReleases(SB), R12
rel:
	LDAXR	(R12), R4
	ADD	$1, R4
	STLXR	R4, (R12), R5
	CBNZ	R5, rel
	ADD	$128, RSP
	RET	// to the restorer: the fault runs again

again:
	LDAXR	(R10), R4
	SUB	$1, R4
	STLXR	R4, (R10), R5
	CBNZ	R5, again
	ADD	$128, RSP
	RET

unlock:
	CLREX
next:
	LDAXR	(R10), R4
	SUB	$1, R4
	STLXR	R4, (R10), R5
	CBNZ	R5, next
	ADD	$SLOT, R9
	SUBS	$1, R11
	BNE	slot
	ADD	$128, RSP
	MOVD	R19, R0
	MOVD	R20, R1
	MOVD	R21, R2

chain:
	MOVD	·sigbusOld(SB), R3
	JMP	(R3)
