-- expect: 4: the script raised a non-string error: { code = 7, why = "no" }
-- An uncaught error({...}) at the top level: it once printed "(error object
-- is a table value)" with no location.
error({ code = 7, why = "no" })
