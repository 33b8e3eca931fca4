# Checks that layers run one way and that systems stay apart:
#   cmake -DSOURCE_DIR=<repo> "-DLAYERS=core;hw;...;systems;cli" "-DSYSTEMS=zellige;compass"
#         "-DSUBLAYERS=zellige/engine;compass/engine" -P check_layers.cmake
# LAYERS lists the shared layers (folders of src/), lowest first; the element `systems` marks
# the level of the systems. SYSTEMS lists the systems: siblings at that level, none of which
# may include or link another. SUBLAYERS lists each system's sub-layers (folders
# <system>/<sub>), lowest first: a sub-layer sits above its system's folder and above the
# sub-layers of its system listed before it.
# A file belongs to the longest listed folder that contains it; a quoted include "x/y.h"
# names the longest listed folder it starts with. Fails, listing every offence, when
#   - a file includes a header of a higher layer (or of a higher sub-layer of its system),
#   - a file of one system includes a header of another system,
#   - a CMakeLists.txt links a tessera_<layer>[_...] library of a higher layer or of another
#     system,
#   - a system's CMakeLists.txt defines a library not named after its folder (a sub-layer is
#     a folder with its own library, tessera_<system>_<sub>, never a second source list), or
#     a folder of a system that holds a CMakeLists.txt is not a listed sub-layer,
#   - a file lies in no listed folder.
# Run by `make test` (ctest: layer_check), and on seeded bad trees (tests/layer_check/) that
# it must refuse.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR OR NOT LAYERS OR NOT SYSTEMS)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=dir -DLAYERS=a;systems;b -DSYSTEMS=s;t "
                      "[-DSUBLAYERS=s/x;t/y] -P check_layers.cmake")
endif()
list(FIND LAYERS systems SYSTEMS_LEVEL)
if(SYSTEMS_LEVEL EQUAL -1)
  message(FATAL_ERROR "LAYERS must contain the element 'systems'")
endif()

# Where `path` (relative to src/) lies: <out>_level (index in LAYERS, -1 if in no listed
# folder), <out>_system (the system's name, or empty) and <out>_sub (0 for a system's own
# folder, k for its k-th listed sub-layer).
function(place_of path out)
  set(level -1)
  set(system "")
  set(sub 0)
  foreach(s ${SYSTEMS})
    string(LENGTH "${s}/" n)
    string(SUBSTRING "${path}" 0 ${n} head)
    if(head STREQUAL "${s}/")
      set(level ${SYSTEMS_LEVEL})
      set(system ${s})
      set(k 0)
      foreach(sl ${SUBLAYERS})
        if(sl MATCHES "^${s}/")
          math(EXPR k "${k} + 1")
          string(LENGTH "${sl}/" m)
          string(SUBSTRING "${path}" 0 ${m} shead)
          if(shead STREQUAL "${sl}/")
            set(sub ${k})
          endif()
        endif()
      endforeach()
    endif()
  endforeach()
  if(level EQUAL -1)
    set(best_len 0)
    set(i 0)
    foreach(layer ${LAYERS})
      string(LENGTH "${layer}/" n)
      string(SUBSTRING "${path}" 0 ${n} head)
      if(NOT layer STREQUAL "systems" AND head STREQUAL "${layer}/" AND n GREATER best_len)
        set(level ${i})
        set(best_len ${n})
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
  endif()
  set(${out}_level ${level} PARENT_SCOPE)
  set(${out}_system "${system}" PARENT_SCOPE)
  set(${out}_sub ${sub} PARENT_SCOPE)
endfunction()

# A name for a place in messages: "compass/engine", "xema", "core".
function(place_name level system sub out)
  if(system)
    set(name ${system})
    if(sub GREATER 0)
      set(k 0)
      foreach(sl ${SUBLAYERS})
        if(sl MATCHES "^${system}/")
          math(EXPR k "${k} + 1")
          if(k EQUAL sub)
            set(name ${sl})
          endif()
        endif()
      endforeach()
    endif()
  else()
    list(GET LAYERS ${level} name)
  endif()
  set(${out} ${name} PARENT_SCOPE)
endfunction()

# Appends to `offences` in the caller when `what` (in place `a`) may not use place `b`.
macro(check_edge what target_text)
  if(b_level GREATER -1)
    place_name(${a_level} "${a_system}" ${a_sub} a_name)
    place_name(${b_level} "${b_system}" ${b_sub} b_name)
    if(b_level GREATER a_level)
      list(APPEND offences "${what} (${a_name}) ${target_text} (${b_name}): points up")
    elseif(a_system AND b_system AND NOT a_system STREQUAL b_system)
      list(APPEND offences
           "${what} (${a_name}) ${target_text} (${b_name}): systems are siblings and never use each other")
    elseif(a_system AND a_system STREQUAL b_system AND b_sub GREATER a_sub)
      list(APPEND offences "${what} (${a_name}) ${target_text} (${b_name}): points up")
    endif()
  endif()
endmacro()

set(offences "")
set(checked 0)
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}/src ${SOURCE_DIR}/src/*.h ${SOURCE_DIR}/src/*.cc)
foreach(f ${files})
  place_of("${f}" a)
  if(a_level EQUAL -1)
    list(APPEND offences "src/${f}: folder is not a layer (add it to TESSERA_SHARED_LAYERS or TESSERA_SYSTEMS)")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/src/${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^[^\"]*\"([^\"]*)\".*$" "\\1" inc "${line}")
    place_of("${inc}" b)
    math(EXPR checked "${checked} + 1")
    check_edge("src/${f}" "includes \"${inc}\"")
  endforeach()
endforeach()

file(GLOB_RECURSE cmakes RELATIVE ${SOURCE_DIR}/src ${SOURCE_DIR}/src/*/CMakeLists.txt)
foreach(c ${cmakes})
  place_of("${c}" a)
  if(a_level EQUAL -1)
    continue()
  endif()
  file(READ ${SOURCE_DIR}/src/${c} text)
  string(REGEX MATCHALL "target_link_libraries\\([^)]*\\)" links "${text}")
  foreach(link ${links})
    string(REGEX MATCHALL "tessera_[a-z0-9_]+" libs "${link}")
    foreach(lib ${libs})
      string(REGEX REPLACE "^tessera_" "" name "${lib}")
      # tessera_zellige_engine -> zellige/engine; tessera_comm_conformance -> comm.
      string(REPLACE "_" "/" as_path "${name}")
      place_of("${as_path}/" b)
      check_edge("src/${c}" "links ${lib}")
    endforeach()
  endforeach()
  # A system's folders: one library each, named after the folder; every folder with a
  # CMakeLists.txt is a listed sub-layer.
  if(a_system)
    get_filename_component(dir "${c}" DIRECTORY)
    string(REPLACE "/" "_" want "tessera_${dir}")
    if(NOT dir STREQUAL a_system AND NOT dir IN_LIST SUBLAYERS)
      list(APPEND offences
           "src/${c}: src/${dir} has its own CMakeLists.txt but is not a listed sub-layer (add it to TESSERA_SUBLAYERS)")
    endif()
    string(REGEX MATCHALL "add_library\\([ \t\n]*tessera_[a-z0-9_]+" defs "${text}")
    foreach(def ${defs})
      string(REGEX REPLACE "^add_library\\([ \t\n]*" "" lib "${def}")
      if(NOT lib STREQUAL want)
        list(APPEND offences
             "src/${c} defines ${lib}: a system's folder holds one library, ${want} (a sub-layer is a folder, src/${dir}/<sub>/, with its own)")
      endif()
    endforeach()
  endif()
endforeach()

list(LENGTH files nfiles)
if(offences)
  list(JOIN offences "\n  " text)
  message(FATAL_ERROR "FAIL: layers run the wrong way:\n  ${text}")
endif()
message("PASS: ${nfiles} files, ${checked} includes, every include and link points down and no "
        "system uses another")
