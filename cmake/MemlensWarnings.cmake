# Warnings and sanitizers for memlens' own targets (never for third-party code).
function(memlens_target_defaults target)
  # -Wno-restrict: GCC 12 at -O3 reports std::string concatenation as overlapping
  # memcpy (GCC bug 105651, a false positive).
  # Frame pointers: the recorder's native stacks walk them (MEMLENS_STACKS).
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -fno-omit-frame-pointer>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>)
endfunction()

if(MEMLENS_SANITIZE)
  string(REPLACE "," ";" _sanitizers "${MEMLENS_SANITIZE}")
  foreach(_s IN LISTS _sanitizers)
    if(NOT _s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "MEMLENS_SANITIZE: unknown sanitizer '${_s}' (use address, undefined, thread, leak)")
    endif()
  endforeach()
  string(REPLACE ";" "," _list "${_sanitizers}")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${_list}> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=${_list})
endif()
