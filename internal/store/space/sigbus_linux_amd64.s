#include "textflag.h"

// The SIGBUS handler of sigbus_linux.go. The kernel calls it with the C
// calling convention: DI the signal, SI the siginfo, DX the ucontext, and
// the return address (the restorer, which calls rt_sigreturn) on the
// stack. It uses no Go state. For a fault for want of a block (si_code
// BUS_ADRERR) on a file system holding a covered reserve with less than
// 1 MiB free, it waits 1 ms, and if the file system is still full gives
// back 1 MiB of that reserve; then it returns, and the faulting
// instruction runs again. Otherwise it jumps to the handler that was
// there before, with the arguments as the kernel gave them.

#define SLOTS 16
#define SLOT 24
#define CHUNK 1048576
#define FULL 1048576
#define SYS_ftruncate 77
#define SYS_fstatfs 138
#define SYS_nanosleep 35
#define PAUSE 1000000
#define BUS_ADRERR 2

// func sigbusHandlerPC() uintptr
TEXT ·sigbusHandlerPC(SB),NOSPLIT,$0-8
	MOVQ	$·sigbusHandler(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func sigbusHandler()
TEXT ·sigbusHandler(SB),NOSPLIT|NOFRAME,$0
	CMPL	8(SI), $BUS_ADRERR
	JNE	chain
	MOVQ	DI, R12
	MOVQ	SI, R13
	MOVQ	DX, R14
	SUBQ	$128, SP	// a struct statfs (120 bytes)
	MOVQ	$·sigbusReserves(SB), R15
	MOVQ	$SLOTS, BX

slot:
	MOVQ	$1, AX
	LOCK
	XADDQ	AX, 16(R15)	// busy++
	CMPQ	8(R15), $0	// a reserve left here?
	JLE	next
	MOVQ	$SYS_fstatfs, AX
	MOVQ	0(R15), DI
	MOVQ	SP, SI
	SYSCALL
	CMPQ	AX, $0
	JNE	next
	MOVQ	32(SP), AX	// f_bavail
	IMULQ	8(SP), AX	// * f_bsize
	CMPQ	AX, $FULL
	JGE	next

	// Full. Whoever filled it is being refused now: let it stop before
	// giving anything back, or it would take that too. Then look again.
	MOVQ	$0, 0(SP)	// tv_sec
	MOVQ	$PAUSE, 8(SP)	// tv_nsec
	MOVQ	$SYS_nanosleep, AX
	MOVQ	SP, DI
	MOVQ	$0, SI
	SYSCALL
	MOVQ	$SYS_fstatfs, AX
	MOVQ	0(R15), DI
	MOVQ	SP, SI
	SYSCALL
	CMPQ	AX, $0
	JNE	next
	MOVQ	32(SP), AX
	IMULQ	8(SP), AX
	CMPQ	AX, $FULL
	JGE	again	// room came back meanwhile: the write may run again as it is

lower:
	MOVQ	8(R15), AX	// size
	CMPQ	AX, $0
	JLE	next
	MOVQ	AX, DX
	SUBQ	$CHUNK, DX
	MOVQ	$0, CX
	CMPQ	DX, $0
	CMOVQLT	CX, DX	// max(size-CHUNK, 0)
	LOCK
	CMPXCHGQ	DX, 8(R15)
	JNE	lower
	MOVQ	$SYS_ftruncate, AX
	MOVQ	0(R15), DI
	MOVQ	DX, SI
	SYSCALL
	MOVQ	$-1, AX
	LOCK
	XADDQ	AX, 16(R15)	// busy--
	MOVQ	$1, AX
	LOCK
	XADDQ	AX, ·sigbusReleases(SB)
	ADDQ	$128, SP
	RET	// to the restorer: the fault runs again

again:
	MOVQ	$-1, AX
	LOCK
	XADDQ	AX, 16(R15)	// busy--
	ADDQ	$128, SP
	RET

next:
	MOVQ	$-1, AX
	LOCK
	XADDQ	AX, 16(R15)	// busy--
	ADDQ	$SLOT, R15
	DECQ	BX
	JNZ	slot
	ADDQ	$128, SP
	MOVQ	R12, DI
	MOVQ	R13, SI
	MOVQ	R14, DX

chain:
	MOVQ	·sigbusOld(SB), AX
	JMP	AX
