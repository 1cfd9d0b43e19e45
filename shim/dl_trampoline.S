/* shim/dl_trampoline.S — the exported dlsym and dlvsym. glibc resolves
 * RTLD_NEXT (and RTLD_DEFAULT's scope) from the caller's return address, so
 * every lookup kcheck does not answer itself is a tail jump into the real
 * function with the caller's return address untouched. */
#if defined(__x86_64__)
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        pushq   %rdi
        pushq   %rsi
        subq    $24, %rsp               /* result slot; keeps %rsp 16-aligned at the call */
        movq    %rsp, %rdx
        call    kc_shim_dlsym_prepare
        testl   %eax, %eax
        jz      1f
        movq    (%rsp), %rax
        addq    $24, %rsp
        popq    %rsi
        popq    %rdi
        ret
1:      addq    $24, %rsp
        popq    %rsi
        popq    %rdi
        jmp     *kc_real_dlsym(%rip)
        .size   dlsym, .-dlsym

        .globl  dlvsym
        .type   dlvsym, @function
dlvsym:
        pushq   %rdi
        pushq   %rsi
        pushq   %rdx
        subq    $16, %rsp
        movq    %rsp, %rcx
        call    kc_shim_dlvsym_prepare
        testl   %eax, %eax
        jz      1f
        movq    (%rsp), %rax
        addq    $16, %rsp
        popq    %rdx
        popq    %rsi
        popq    %rdi
        ret
1:      addq    $16, %rsp
        popq    %rdx
        popq    %rsi
        popq    %rdi
        jmp     *kc_real_dlvsym(%rip)
        .size   dlvsym, .-dlvsym
        .section .note.GNU-stack,"",@progbits
#else
#error "kcheck's dlsym trampoline supports x86-64 only"
#endif
